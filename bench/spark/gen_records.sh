#!/usr/bin/env bash
# bench/spark/gen_records.sh [--dtf PATH] [--build DIR] [--work DIR] [--copies N]
#
# gen-records over Spark against the original job's PySpark conversion, on
# the same local standalone cluster (tests/testing/spark_cluster.sh: one
# master, two workers of 2 cores, on loopback), the same input: UCI Adult's
# adult.data repeated N times (default 16: 520,976 rows, 62 MB), the
# census columns, GZIP TFRecord files of tf.train.Example.
#   dtf    dtf gen-records --job J --profile spark --workers 2: 2 barrier
#          tasks (one executor of 1 core each), each converting with dtf's
#          own converter the shards it owns (4 shards), then moved into place
#   peer   spark-submit gen_tfrecords.py: TensorFlowOnSpark's conversion,
#          sc.textFile with 4 partitions, rows to tf.train.Example with
#          TensorFlow in the executors (2 executors of 1 core), one
#          TFRecordWriter per partition
#   local  dtf gen-records --job J on this machine, for scale
# Each clock runs from the command's start to its end (submission, the
# executors' start and the shipped runtime included). Prints rows/s of
# each and dtf's over the peer's; the same go to WORK/results.json. The
# peer's executors need TensorFlow: BUILD/venv-tf (tests/interop/tf_env.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/../.." && pwd)"
build="$src/build"
dtf=""
work=""
copies=16
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dtf) dtf="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --copies) copies="$2"; shift 2 ;;
    *) echo "usage: $0 [--dtf PATH] [--build DIR] [--work DIR] [--copies N]" >&2; exit 2 ;;
  esac
done
build="$(cd "$build" && pwd)"
dtf="$(realpath "${dtf:-$build/cmd/dtf}")"
work="$(realpath -m "${work:-$build/bench-spark-gen}")"
shared="$(realpath "$src/../shared")"
tf_python="$(bash "$src/tests/interop/tf_env.sh" "$build")"
mkdir -p "$work"
cluster="$work/cluster"
bash "$src/tests/testing/spark_cluster.sh" start "$cluster" "$build" >/dev/null
cleanup() {
  bash "$src/tests/testing/spark_cluster.sh" stop "$cluster"
  rm -rf "$work/job/records" "$work/job/.dtf" "$work/peer" "$work/adult-x.csv"
}
trap cleanup EXIT
set -a
# shellcheck disable=SC1091
source "$cluster/env"
set +a
now() { date +%s.%N; }

csv="$work/adult-x.csv"
: >"$csv"
for _ in $(seq 1 "$copies"); do cat "$shared/data/adult/adult.data" >>"$csv"; done
rows="$(grep -c , "$csv")"
job="$work/job"
mkdir -p "$job/profiles"
sed -e "s#^csv = .*#csv = [\"$csv\"]#" \
    -e "s#^records = .*#records = \"$job/records\"#" \
    "$src/examples/census/dtf.toml" >"$job/dtf.toml"
cat >"$job/profiles/spark.toml" <<TOML
backend = "spark"
workers = 2

[spark]
master = "$SPARK_MASTER_URL"
spark_submit = "$SPARK_SUBMIT"
python = "$SPARK_PYTHON"
executor_memory = "1g"
run_dir = "$work/runs"
conf = { "spark.driver.host" = "127.0.0.1", "spark.driver.bindAddress" = "127.0.0.1" }
TOML

t0="$(now)"
"$dtf" gen-records --job "$job/dtf.toml" --threads 1 >/dev/null 2>"$work/local.err"
local_s="$(python3 -c "print(f'{$(now) - $t0:.2f}')")"
rm -rf "$job/records"

# Packs the runtime once, outside the clock (later runs find it cached).
"$dtf" gen-records --job "$job/dtf.toml" --profile spark --workers 2 \
  --threads 1 >/dev/null 2>"$work/warm.err" ||
  { tail -20 "$work/warm.err" >&2; echo "bench: the warm-up run failed" >&2; exit 1; }
rm -rf "$job/records"
t0="$(now)"
"$dtf" gen-records --job "$job/dtf.toml" --profile spark --workers 2 \
  --threads 1 >/dev/null 2>"$work/dtf.err"
dtf_s="$(python3 -c "print(f'{$(now) - $t0:.2f}')")"

rm -rf "$work/peer"
t0="$(now)"
out="$("$SPARK_SUBMIT" --master "$SPARK_MASTER_URL" --deploy-mode client \
  --conf spark.executor.cores=1 --conf spark.task.cpus=1 \
  --conf spark.executor.memory=1g --conf spark.cores.max=2 \
  --conf spark.executor.instances=2 --conf spark.dynamicAllocation.enabled=false \
  --conf spark.pyspark.python="$tf_python" \
  --conf spark.pyspark.driver.python="$SPARK_PYTHON" \
  --conf spark.driver.host=127.0.0.1 --conf spark.driver.bindAddress=127.0.0.1 \
  "$here/gen_tfrecords.py" "$csv" "$work/peer" 4 2>"$work/peer.err")"
peer_s="$(python3 -c "print(f'{$(now) - $t0:.2f}')")"
peer_rows="$(awk '/^rows/ {print $2}' <<<"$out")"
[[ "$peer_rows" == "$rows" ]] || { tail -20 "$work/peer.err" >&2; echo "bench: the peer wrote $peer_rows rows of $rows" >&2; exit 1; }

python3 - "$work/results.json" "$rows" "$local_s" "$dtf_s" "$peer_s" <<'PY'
import json, os, platform, sys, time
rows = int(sys.argv[2])
local_s, dtf_s, peer_s = map(float, sys.argv[3:6])
print(f"gen-records of {rows} census rows (GZIP, 4 shards), clock from the command's start to its end:")
print(f"  dtf gen-records, this machine, 1 thread     {local_s:7.2f} s  {rows / local_s:10.0f} rows/s")
print(f"  dtf gen-records --profile spark, 2 tasks    {dtf_s:7.2f} s  {rows / dtf_s:10.0f} rows/s")
print(f"  PySpark gen_tfrecords.py, 2 executors       {peer_s:7.2f} s  {rows / peer_s:10.0f} rows/s")
print(f"  dtf over Spark / the PySpark peer           {peer_s / dtf_s:7.1f}x")
json.dump({"date": time.strftime("%Y-%m-%d %H:%M:%S"),
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
           "rows": rows, "local_s": local_s, "dtf_spark_s": dtf_s,
           "pyspark_s": peer_s, "ratio": peer_s / dtf_s},
          open(sys.argv[1], "w"), indent=2)
PY
