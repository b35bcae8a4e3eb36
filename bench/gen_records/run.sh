#!/usr/bin/env bash
# bench/gen_records/run.sh [--dtf PATH] [--rows N] [--work DIR]
#                          [--python-rows N] [--build DIR]
#
# CSV -> TFRecord throughput of `dtf gen-records` against its peers, on one
# large CSV made by repeating the UCI Adult rows (adult.data): `cp` of the
# same file (the I/O ceiling), dtf with 1 thread and with all cores, and the
# original job's Python path (python_peer.py: pandas -> tf.train.Example ->
# TFRecordWriter). Every run writes 4 uncompressed shards. Prints a table and
# writes the figures to WORK/results.json.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
shared="${DTF_SHARED_DIR:-$repo/../shared}"
adult="$shared/data/adult/adult.data"

dtf=""
rows=""
work=""
python_rows=""
build="$repo/build"
min_input_bytes=$((500 * 1000 * 1000))
default_rows=4500000
shards=4

usage() {
  sed -n '2,3p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --dtf) dtf="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --python-rows) python_rows="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done

log() { echo "bench: $*" >&2; }

# find_dtf.
source "$here/../census_job.sh"

[[ -n "$dtf" ]] || dtf="$(find_dtf)"
if [[ -z "$dtf" ]]; then
  echo "no dtf binary under $build/cmd; pass --dtf PATH" >&2
  exit 2
fi
dtf="$(realpath "$dtf")"
[[ -n "$work" ]] || work="$build/bench-gen-records"
mkdir -p "$work"
work="$(realpath "$work")"
[[ -f "$adult" ]] || { echo "missing $adult (set DTF_SHARED_DIR)" >&2; exit 2; }

python="$(bash "$repo/tests/interop/tf_env.sh" "$build")"

# --------------------------------------------------------------- the input

# Rows for at least 500 MB of CSV, unless --rows said how many.
choose_rows() {
  if [[ -n "$rows" ]]; then
    echo "$rows"
    return
  fi
  local bytes lines needed
  bytes=$(grep -v '^[[:space:]]*$' "$adult" | wc -c)
  lines=$(grep -c -v '^[[:space:]]*$' "$adult")
  needed=$(( (min_input_bytes * lines + bytes - 1) / bytes ))
  if (( needed > default_rows )); then echo "$needed"; else echo "$default_rows"; fi
}

# input.csv: the first ROWS rows of adult.data repeated; kept between runs
# (input.rows records how many rows it holds).
make_input() {
  local want="$1" input="$work/input.csv"
  if [[ -f "$input" && "$(cat "$work/input.rows" 2>/dev/null)" == "$want" ]]; then
    log "re-using $input ($want rows)"
    return
  fi
  log "writing $input ($want rows of adult.data, repeated)"
  rm -f "$work/input.rows"
  local one="$work/adult.rows"
  grep -v '^[[:space:]]*$' "$adult" > "$one"
  local per_copy i
  per_copy=$(wc -l < "$one")
  : > "$input"
  for ((i = 0; i < want / per_copy; i++)); do cat "$one" >> "$input"; done
  head -n $((want % per_copy)) "$one" >> "$input"
  rm -f "$one"
  echo "$want" > "$work/input.rows"
}

write_schema() {
  cat > "$work/adult_schema.toml" <<'TOML'
# UCI Adult, no header; the same schema as bench/gen_records/python_peer.py.
[schema]
missing = ["?"]
label = { column = "income", map = { "<=50K" = 0, ">50K" = 1, "<=50K." = 0, ">50K." = 1 } }

[[schema.columns]]
name = "age"
type = "int"
default = -1

[[schema.columns]]
name = "workclass"
type = "str"
default = "Unknown"

[[schema.columns]]
name = "fnlwgt"
type = "int"

[[schema.columns]]
name = "education"
type = "str"

[[schema.columns]]
name = "education_num"
type = "int"

[[schema.columns]]
name = "marital_status"
type = "str"

[[schema.columns]]
name = "occupation"
type = "str"

[[schema.columns]]
name = "relationship"
type = "str"

[[schema.columns]]
name = "race"
type = "str"

[[schema.columns]]
name = "gender"
type = "str"

[[schema.columns]]
name = "capital_gain"
type = "int"
default = 0

[[schema.columns]]
name = "capital_loss"
type = "int"
default = 0

[[schema.columns]]
name = "hours_per_week"
type = "int"

[[schema.columns]]
name = "native_country"
type = "str"
default = ""

[[schema.columns]]
name = "income"
type = "str"
TOML
}

# ------------------------------------------------------------- the timings

now_ns() { date +%s%N; }

# seconds_since START_NS: elapsed seconds with millisecond precision.
seconds_since() {
  local end
  end=$(now_ns)
  awk -v s="$1" -v e="$end" 'BEGIN { printf "%.3f", (e - s) / 1e9 }'
}

# Sum of the sizes of the files under DIR.
output_bytes() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }

bench_cp() {
  local copy="$work/cp-copy.csv"
  rm -f "$copy"
  local start
  start=$(now_ns)
  # --reflink=never: a real copy of the bytes, not a shared extent.
  cp --reflink=never "$work/input.csv" "$copy"
  cp_seconds=$(seconds_since "$start")
  rm -f "$copy"
}

# bench_dtf THREADS NAME: times one run; its --json summary goes to
# WORK/NAME.summary and the figures to the environment for the report.
bench_dtf() {
  local threads="$1" name="$2" out="$work/out-dtf"
  rm -rf "$out"
  local start
  start=$(now_ns)
  "$dtf" gen-records --schema "$work/adult_schema.toml" --no-header \
    --out "$out" --shards "$shards" --compression none \
    --threads "$threads" --json "$work/input.csv" > "$work/$name.summary"
  export "${name}_seconds=$(seconds_since "$start")"
  export "${name}_output_bytes=$(output_bytes "$out")"
  rm -rf "$out"
}

bench_python() {
  local out="$work/out-python"
  rm -rf "$out"
  local args=(--csv "$work/input.csv" --out "$out" --shards "$shards")
  [[ -z "$python_rows" ]] || args+=(--rows "$python_rows")
  "$python" "$here/python_peer.py" "${args[@]}" > "$work/python.summary"
  rm -rf "$out"
}

# --------------------------------------------------------------------- main

rows="$(choose_rows)"
make_input "$rows"
write_schema
input_bytes=$(stat -c %s "$work/input.csv")
python_input_bytes="$input_bytes"
if [[ -n "$python_rows" ]]; then
  python_input_bytes=$(head -n "$python_rows" "$work/input.csv" | wc -c)
fi
cores=$(nproc)
export rows cores shards input_bytes python_input_bytes work
log "input: $rows rows, $input_bytes bytes; dtf: $dtf"

log "warming the page cache"
cat "$work/input.csv" > /dev/null

log "cp"
bench_cp
export cp_seconds

log "dtf gen-records --threads 1"
bench_dtf 1 dtf1

log "dtf gen-records --threads $cores"
bench_dtf "$cores" dtfn

log "python peer (pandas -> tf.train.Example -> TFRecordWriter)${python_rows:+, first $python_rows rows}"
bench_python

"$python" - <<'PY'
import datetime
import json
import os
import platform

env = os.environ
work = env["work"]
rows, cores, shards = int(env["rows"]), int(env["cores"]), int(env["shards"])
input_bytes = int(env["input_bytes"])


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def summary(name):
    with open(os.path.join(work, f"{name}.summary")) as f:
        text = f.read()
    try:
        return json.loads(text)
    except ValueError:
        return text.strip()


def dtf_run(name, threads):
    return {"tool": f"dtf gen-records --threads {threads}", "rows": rows,
            "seconds": float(env[f"{name}_seconds"]),
            "input_bytes": input_bytes,
            "output_bytes": int(env[f"{name}_output_bytes"]),
            "summary": summary(name)}


python = summary("python")
runs = [
    {"tool": "cp", "rows": rows, "seconds": float(env["cp_seconds"]),
     "input_bytes": input_bytes},
    dtf_run("dtf1", 1),
    dtf_run("dtfn", cores),
    {"tool": "python: pandas + tf.train.Example + TFRecordWriter",
     "rows": python["rows"], "seconds": python["seconds"],
     "input_bytes": int(env["python_input_bytes"]),
     "output_bytes": python["output_bytes"],
     "partial": python["rows"] < rows},
]
for run in runs:
    run["rows_per_s"] = run["rows"] / run["seconds"]
    run["mb_per_s"] = run["input_bytes"] / 1e6 / run["seconds"]
cp, dtf1, dtfn, py = runs
ratios = {
    "dtf_all_threads_vs_python_rows_per_s": dtfn["rows_per_s"] / py["rows_per_s"],
    "dtf_1_thread_rows_per_s_per_core": dtf1["rows_per_s"],
    "dtf_all_threads_rows_per_s_per_core": dtfn["rows_per_s"] / cores,
    "dtf_all_threads_vs_cp_bytes_per_s": dtfn["mb_per_s"] / cp["mb_per_s"],
    "dtf_1_thread_vs_cp_bytes_per_s": dtf1["mb_per_s"] / cp["mb_per_s"],
}
results = {
    "benchmark": "gen_records",
    "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    "machine": {"cpu": cpu_model(), "cores": cores,
                "kernel": platform.release()},
    "input": {"source": "adult.data rows, repeated", "rows": rows,
              "bytes": input_bytes, "shards": shards, "compression": "none"},
    "runs": runs,
    "ratios": ratios,
}
path = os.path.join(work, "results.json")
with open(path, "w") as f:
    json.dump(results, f, indent=2)
    f.write("\n")

print(f"gen-records: {rows:,} Adult rows, {input_bytes / 1e6:.0f} MB of CSV, "
      f"{shards} shards, no compression; {cores} cores, {cpu_model()}")
print(f"{'tool':<56} {'rows':>10} {'seconds':>9} {'rows/s':>12} {'MB/s':>8}")
for run in runs:
    note = " (first rows)" if run.get("partial") else ""
    print(f"{run['tool'] + note:<56} {run['rows']:>10,} {run['seconds']:>9.2f} "
          f"{run['rows_per_s']:>12,.0f} {run['mb_per_s']:>8.1f}")
print()
print(f"dtf ({cores} threads) / python, rows/s:  "
      f"{ratios['dtf_all_threads_vs_python_rows_per_s']:.1f}x")
print(f"dtf 1 thread, rows/s per core:       "
      f"{ratios['dtf_1_thread_rows_per_s_per_core']:,.0f}")
print(f"dtf {cores} threads, rows/s per core:      "
      f"{ratios['dtf_all_threads_rows_per_s_per_core']:,.0f}")
print(f"dtf ({cores} threads) / cp, MB/s:         "
      f"{ratios['dtf_all_threads_vs_cp_bytes_per_s']:.2f}")
print(f"dtf (1 thread) / cp, MB/s:           "
      f"{ratios['dtf_1_thread_vs_cp_bytes_per_s']:.2f}")
if py["partial"]:
    print(f"python rate from its first {py['rows']:,} rows (--python-rows)")
print(f"results: {path}")
PY
