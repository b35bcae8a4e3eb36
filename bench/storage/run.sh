#!/usr/bin/env bash
# bench/storage/run.sh [--dtf PATH] [--rows N] [--steps N] [--repeat N]
#                      [--work DIR] [--build DIR] [--server-cpu N]
#
# dtf on an S3 server on loopback (SeaweedFS, tests/testing/s3_server.sh)
# against the same work on local disk, on the census job (UCI Adult rows):
#   gen-records  ROWS rows of CSV (adult.data repeated) -> 4 gzip shards:
#                local file -> local directory, against s3:// CSV -> s3://
#                records (rows/s)
#   train        dtf train --steps STEPS from the local shards, against from
#                the bucket's shards (output_dir local in both, so that only
#                the input differs; examples/s of the training clock)
# Each figure is the best of REPEAT runs; the server is started in WORK and
# stopped at the end. Prints a table and writes WORK/results.json.
# --server-cpu N pins the S3 server to CPU N and every dtf run, local or
# s3, to the other CPUs (taskset), as if the store were a host of its own;
# by default they share every CPU, so the server's own work (about a
# quarter of dtf's CPU time for gen-records) counts against the s3 runs.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
shared="${DTF_SHARED_DIR:-$repo/../shared}"
dtf="$repo/build/cmd/dtf"
rows=1000000
steps=2000
repeat=3
work="$repo/build/bench-storage"
build="$repo/build"
server_cpu=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dtf) dtf="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --server-cpu) server_cpu="$2"; shift 2 ;;
    *) sed -n '2,3p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
dtf="$(realpath "$dtf")"
mkdir -p "$work"
work="$(realpath "$work")"
server="$work/s3-server"
trap 'bash "$repo/tests/testing/s3_server.sh" stop "$server"' EXIT
set -a
# shellcheck disable=SC1090
source <(bash "$repo/tests/testing/s3_server.sh" start "$server" "$build")
set +a
# pin: the prefix that runs dtf (on the CPUs the server does not have).
pin=()
if [[ -n "$server_cpu" ]]; then
  others="$(python3 -c 'import os, sys; c = int(sys.argv[1]); print(",".join(str(i) for i in sorted(os.sched_getaffinity(0)) if i != c))' "$server_cpu")"
  [[ -n "$others" ]] || { echo "bench: no CPU left for dtf beside $server_cpu" >&2; exit 2; }
  for p in $(pgrep -f "weed server -dir=$server"); do
    taskset -a -cp "$server_cpu" "$p" > /dev/null
  done
  pin=(taskset -c "$others")
  echo "S3 server on CPU $server_cpu, dtf on CPUs $others" >&2
fi
s3curl() {
  curl -sS --fail-with-body --aws-sigv4 "aws:amz:$AWS_REGION:s3" \
    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
    -H "x-amz-content-sha256:UNSIGNED-PAYLOAD" "$@"
}

# The CSV: adult.data repeated to ROWS rows, kept for later runs.
csv="$work/adult-$rows.csv"
if [[ ! -f "$csv" ]]; then
  python3 - "$shared/data/adult/adult.data" "$csv" "$rows" <<'PY'
import sys
lines = [l for l in open(sys.argv[1]) if l.strip()]
n = int(sys.argv[3])
with open(sys.argv[2] + ".tmp", "w") as out:
    for i in range(n):
        out.write(lines[i % len(lines)])
import os
os.replace(sys.argv[2] + ".tmp", sys.argv[2])
PY
fi
bytes="$(stat -c %s "$csv")"
s3curl -X PUT "$AWS_ENDPOINT_URL/bench" > /dev/null || true
s3curl -T "$csv" "$AWS_ENDPOINT_URL/bench/csv/adult.csv" > /dev/null

# job DIR CSV RECORDS: the census job reading CSV, writing RECORDS, output
# in DIR/out.
job() {
  mkdir -p "$1"
  sed -e "s#^csv = .*#csv = { train = [\"$2\"], eval = [\"$shared/data/adult/adult.test\"] }#" \
      -e "s#^records = .*#records = \"$3\"#" \
      -e "s#^output_dir = .*#output_dir = \"$1/out\"#" \
      "$repo/examples/census/dtf.toml" > "$1/dtf.toml"
  echo "$1/dtf.toml"
}
local_job="$(job "$work/local" "$csv" "$work/local/records")"
s3_job="$(job "$work/s3" "s3://bench/csv/adult.csv" "s3://bench/records")"

# best SECONDS...: the smallest.
best() { printf '%s\n' "$@" | sort -g | head -1; }
# seconds CMD...: wall seconds of CMD.
seconds() {
  local t0 t1
  t0="$(date +%s.%N)"
  "$@" > /dev/null 2>&1 || { echo "bench: $* failed" >&2; "$@" >&2; exit 1; }
  t1="$(date +%s.%N)"
  python3 -c "print(f'{$t1 - $t0:.3f}')"
}

gen_local=() gen_s3=()
for ((i = 0; i < repeat; i++)); do
  gen_local+=("$(seconds "${pin[@]}" "$dtf" gen-records --job "$local_job" --overwrite)")
  gen_s3+=("$(seconds "${pin[@]}" "$dtf" gen-records --job "$s3_job" --overwrite)")
done
gl="$(best "${gen_local[@]}")" gs="$(best "${gen_s3[@]}")"

# Training: the eval split's shards are the same 16,281 rows in both.
train_eps() {
  rm -rf "$(dirname "$1")/out"
  "${pin[@]}" "$dtf" train --job "$1" --steps "$steps" --no-eval --quiet \
    --metrics-out "$(dirname "$1")/metrics.json" > /dev/null
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["examples_per_sec"])' \
    "$(dirname "$1")/metrics.json"
}
train_local=() train_s3=()
for ((i = 0; i < repeat; i++)); do
  train_local+=("$(train_eps "$local_job")")
  train_s3+=("$(train_eps "$s3_job")")
done
tl="$(printf '%s\n' "${train_local[@]}" | sort -g | tail -1)"
ts="$(printf '%s\n' "${train_s3[@]}" | sort -g | tail -1)"

python3 - "$work/results.json" "$rows" "$bytes" "$steps" "$gl" "$gs" "$tl" "$ts" \
  "${gen_local[*]}" "${gen_s3[*]}" "${train_local[*]}" "${train_s3[*]}" <<'PY'
import json, sys
(out, rows, nbytes, steps, gl, gs, tl, ts,
 gla, gsa, tla, tsa) = sys.argv[1:]
rows, nbytes, steps = int(rows), int(nbytes), int(steps)
gl, gs, tl, ts = float(gl), float(gs), float(tl), float(ts)
r = {
  "gen_records": {"rows": rows, "csv_bytes": nbytes,
                  "local_seconds": gl, "s3_seconds": gs,
                  "local_rows_per_sec": rows / gl, "s3_rows_per_sec": rows / gs,
                  "s3_vs_local": gl / gs,
                  "runs": {"local": gla.split(), "s3": gsa.split()}},
  "train": {"steps": steps, "local_examples_per_sec": tl,
            "s3_examples_per_sec": ts, "s3_vs_local": ts / tl,
            "runs": {"local": tla.split(), "s3": tsa.split()}},
}
json.dump(r, open(out, "w"), indent=2)
print(f"gen-records, {rows} rows ({nbytes / 1e6:.0f} MB CSV) -> 4 gzip shards")
print(f"  local disk -> local disk  {gl:7.2f} s  {rows / gl / 1e3:8.1f}k rows/s")
print(f"  s3 -> s3                  {gs:7.2f} s  {rows / gs / 1e3:8.1f}k rows/s"
      f"   {100 * gl / gs:.0f}% of local (goal >= 70%)")
print(f"train --steps {steps}, no eval")
print(f"  local records             {tl:10.0f} examples/s")
print(f"  s3 records                {ts:10.0f} examples/s"
      f"   {100 * ts / tl:.0f}% of local (goal >= 90%)")
PY
