#!/usr/bin/env bash
# The main job: installs what is missing, builds dtf, converts the UCI Adult
# census CSVs into sharded, compressed TFRecord files, and trains
# TensorFlow's census wide & deep model on them as a local cluster (1
# parameter server and 2 workers, each a `dtf serve` process; the chief
# evaluates on adult.test), ending with the run's metrics; then scores a few
# held-out records with the exported model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh dtf
dtf="$PWD/build/cmd/dtf"
job=examples/census/dtf.toml
"$dtf" gen-records --job "$job" --overwrite
echo "--- first records of the eval split"
"$dtf" inspect --limit 2 examples/census/records/eval/part-*.tfrecord.gz
echo "--- the plan"
"$dtf" launch --job "$job" --profile local --dry-run > examples/census/plan.txt
head -12 examples/census/plan.txt
echo "--- training as a local cluster (examples/census/out/)"
"$dtf" launch --job "$job" --profile local \
  --metrics-out "$PWD/examples/census/out/metrics.json"
echo "--- predictions for the first eval records"
"$dtf" predict --model examples/census/out/model \
  --input 'examples/census/records/eval/part-00000-*' --keep age,occupation \
  --format csv --output examples/census/out/predictions.csv
head -6 examples/census/out/predictions.csv
echo "--- the run's metrics"
cat examples/census/out/metrics.json
