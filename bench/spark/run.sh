#!/usr/bin/env bash
# bench/spark/run.sh [--dtf PATH] [--build DIR] [--work DIR] [--repeat N]
#
# Submission to every task running on a local Spark standalone cluster
# (tests/testing/spark_cluster.sh: one master, two workers of 2 cores, on
# loopback), dtf against Spark itself, N times each (default 3), one after
# the other on the same cluster:
#   spark  spark-submit of empty_stage.py: an empty barrier stage of 3 tasks
#          with the settings dtf submits with (one executor of 1 core per
#          task, Spark's barrier check every second), each task meeting the
#          others (allGather); the clock stops when the last task got there
#   dtf    dtf launch --profile spark of the census job (1 PS + 2 workers,
#          the runtime and the job shipped with --archives, the runtime
#          archive already packed); the clock stops when the last task's
#          dtf serve wrote its ready file (it serves)
#   dtf, installed
#          the same with ship = false: the executors run the launcher's dtf
#          and job file where they are (dtf installed on every node, or on
#          storage they share), nothing shipped or unpacked
# Both clocks start just before the command. Prints each run and the
# medians, and dtf's overhead (median dtf - median spark); the same go to
# WORK/results.json.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/../.." && pwd)"
build="$src/build"
dtf=""
work=""
repeat=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dtf) dtf="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    *) echo "usage: $0 [--dtf PATH] [--build DIR] [--work DIR] [--repeat N]" >&2; exit 2 ;;
  esac
done
build="$(cd "$build" && pwd)"
dtf="$(realpath "${dtf:-$build/cmd/dtf}")"
work="$(realpath -m "${work:-$build/bench-spark}")"
shared="$(realpath "$src/../shared")"
mkdir -p "$work"
cluster="$work/cluster"
bash "$src/tests/testing/spark_cluster.sh" start "$cluster" "$build" >/dev/null
trap 'bash "$src/tests/testing/spark_cluster.sh" stop "$cluster"' EXIT
set -a
# shellcheck disable=SC1091
source "$cluster/env"
set +a
now() { date +%s.%N; }

# The census job with absolute records and output_dir (the tasks run the
# shipped job in their executors' directories).
job_dir="$work/census"
if [[ ! -d "$job_dir/records" ]]; then
  mkdir -p "$job_dir/profiles"
  sed -e "s#\.\./\.\./\.\./shared#$shared#g" \
      -e "s#^records = \"records\"#records = \"$job_dir/records\"#" \
      -e "s#^output_dir = \"out\"#output_dir = \"$job_dir/out\"#" \
      "$src/examples/census/dtf.toml" >"$job_dir/dtf.toml"
  (cd "$job_dir" && "$dtf" gen-records --job dtf.toml >/dev/null)
fi
cat >"$job_dir/profiles/spark.toml" <<TOML
backend = "spark"
ps = 1
workers = 2

[spark]
master = "$SPARK_MASTER_URL"
spark_submit = "$SPARK_SUBMIT"
python = "$SPARK_PYTHON"
executor_memory = "512m"
conf = { "spark.driver.host" = "127.0.0.1", "spark.driver.bindAddress" = "127.0.0.1" }
TOML
sed 's/^\[spark\]$/[spark]\nship = false/' "$job_dir/profiles/spark.toml" \
  >"$job_dir/profiles/spark-installed.toml"
# Packs the runtime once, outside the clock (later launches find it cached).
"$dtf" launch --job "$job_dir/dtf.toml" --profile spark --set train.steps=1 \
  >/dev/null 2>&1 || { echo "bench: the warm-up launch failed" >&2; exit 1; }

spark_runs=()
dtf_runs=()
installed_runs=()
# dtf_clock PROFILE I: dtf launch --profile PROFILE, from its start to the
# last task's ready file, in seconds.
dtf_clock() {
  local runs="$job_dir/.dtf/runs" t0 t1 id
  t0="$(now)"
  "$dtf" launch --job "$job_dir/dtf.toml" --profile "$1" --set train.steps=1 \
    >/dev/null 2>"$work/$1-$2.err" ||
    { echo "bench: dtf launch --profile $1 failed" >&2; tail -5 "$work/$1-$2.err" >&2; exit 1; }
  id="$(ls -t "$runs" | head -1)"
  t1="$(stat -c %.9Y "$runs/$id"/*/ready | sort -n | tail -1)"
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}
for i in $(seq 1 "$repeat"); do
  t0="$(now)"
  out="$("$SPARK_SUBMIT" --master "$SPARK_MASTER_URL" --deploy-mode client \
    --conf spark.executor.cores=1 --conf spark.task.cpus=1 \
    --conf spark.executor.memory=512m --conf spark.cores.max=3 \
    --conf spark.executor.instances=3 --conf spark.dynamicAllocation.enabled=false \
    --conf spark.scheduler.barrier.maxConcurrentTasksCheck.interval=1s \
    --conf spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures=10 \
    --conf spark.pyspark.python="$SPARK_PYTHON" \
    --conf spark.pyspark.driver.python="$SPARK_PYTHON" \
    --conf spark.driver.host=127.0.0.1 --conf spark.driver.bindAddress=127.0.0.1 \
    "$here/empty_stage.py" 3 2>"$work/spark-$i.err")"
  t1="$(awk '/^all_running/ {print $2}' <<<"$out")"
  spark_runs+=("$(python3 -c "print(f'{$t1 - $t0:.2f}')")")

  dtf_runs+=("$(dtf_clock spark "$i")")
  installed_runs+=("$(dtf_clock spark-installed "$i")")
  echo "run $i: spark ${spark_runs[-1]} s, dtf ${dtf_runs[-1]} s," \
    "dtf installed ${installed_runs[-1]} s"
done
python3 - "$work/results.json" "${spark_runs[*]}" "${dtf_runs[*]}" \
  "${installed_runs[*]}" <<'PY'
import json, os, platform, statistics, sys, time
spark = [float(x) for x in sys.argv[2].split()]
dtf = [float(x) for x in sys.argv[3].split()]
installed = [float(x) for x in sys.argv[4].split()]
ms, md = statistics.median(spark), statistics.median(dtf)
mi = statistics.median(installed)
print(f"submission to every task running (median of {len(spark)}):")
print(f"  spark, an empty barrier stage of 3 tasks  {ms:7.2f} s")
print(f"  dtf launch, 1 PS + 2 workers serving      {md:7.2f} s")
print(f"  dtf adds                                  {md - ms:7.2f} s")
print(f"  dtf launch, ship = false (installed)      {mi:7.2f} s")
print(f"  dtf installed adds                        {mi - ms:7.2f} s")
json.dump({"date": time.strftime("%Y-%m-%d %H:%M:%S"),
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
           "spark_s": spark, "dtf_s": dtf, "spark_median_s": ms,
           "dtf_median_s": md, "dtf_adds_s": md - ms,
           "installed_s": installed, "installed_median_s": mi,
           "installed_adds_s": mi - ms},
          open(sys.argv[1], "w"), indent=2)
PY
