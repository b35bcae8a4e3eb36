#!/usr/bin/env bash
# The main job: installs what is missing, builds dtf, converts the UCI Adult
# census CSVs into sharded, compressed TFRecord files, trains TensorFlow's
# census wide & deep model on them (evaluated on adult.test), and scores a
# few held-out records with the exported model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
dtf=build/cmd/dtf
job=examples/census/dtf.toml
"$dtf" gen-records --job "$job" --overwrite
echo "--- first records of the eval split"
"$dtf" inspect --limit 2 examples/census/records/eval/part-*.tfrecord.gz
echo "--- training (examples/census/out/)"
"$dtf" train --job "$job" --restart --metrics-out examples/census/out/metrics.json
echo "--- predictions for the first eval records"
"$dtf" predict --model examples/census/out/model \
  --input 'examples/census/records/eval/part-00000-*' --keep age,occupation \
  --format csv | head -6
