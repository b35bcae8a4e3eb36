#!/usr/bin/env bash
# bench/predict/run.sh [--dtf PATH] [--build DIR] [--work DIR] [--copies N]
#   [--batch-size N] [--threads N] [--workers N] [--train-steps N]
#   [--repeats N] [--wait-idle SECONDS] [--only dtf,tf]
#
# Examples/s of scoring the census records (examples/census/dtf.toml) with
# the model `dtf train` exports: `dtf predict` in one process, `dtf predict
# --profile local --workers W` (W shards, one task each, merged), and
# TensorFlow running the exported SavedModel's `classify` signature
# (out/model/saved_model, tf.saved_model.load; bench/predict/tf_peer.py) on
# the same records, in one run; and `dtf export --format savedmodel` of the
# model (its wall time, and the SavedModel's size by part). Prints a table
# and writes WORK/results.json.
#
# The model is the census job trained for --train-steps steps (default 200;
# what it scores does not change the speed). The input is every train and
# eval record file, --copies times (default 8, hard links under WORK/input:
# about 390k records). dtf's figures are the whole command's wall time
# (model load, read, score, write the output); TensorFlow's the scoring loop
# (reading included, after loading the model and one traced call). The
# one-process run uses --threads (default: the cores); the W tasks get
# --threads / W each. The two dtf outputs are compared byte for byte.
# --repeats N runs the sequence N times and reports each figure's best;
# --wait-idle S first waits, at most S seconds, for the machine to go idle
# (bench/idle.sh). --only leaves tools out.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
job_src="$repo/examples/census/dtf.toml"

dtf=""
build="$repo/build"
work=""
copies=8
batch=1024
threads=""
workers=2
train_steps=200
repeats=1
wait_idle_s=0
only="dtf,tf"

usage() {
  sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --dtf) dtf="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --copies) copies="$2"; shift 2 ;;
    --batch-size) batch="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --train-steps) train_steps="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --wait-idle) wait_idle_s="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done

log() { echo "bench: $*" >&2; }
# write_job; measured (and idle.sh's wait_idle).
source "$here/../census_job.sh"
source "$here/../measure.sh"

[[ -n "$threads" ]] || threads=$(nproc)
for n in copies batch threads workers train_steps repeats; do
  declare -n v="$n"
  if ! [[ "$v" =~ ^[0-9]+$ ]] || (( v < 1 )); then
    echo "--${n//_/-} must be a positive integer, got '$v'" >&2
    exit 2
  fi
  unset -n v
done
IFS=, read -r -a tools <<< "$only"
for tool in "${tools[@]}"; do
  case "$tool" in dtf|tf) ;; *) echo "--only: unknown tool $tool" >&2; exit 2 ;; esac
done
wants() { [[ ",$only," == *",$1,"* ]]; }
task_threads=$(( threads / workers > 0 ? threads / workers : 1 ))

mkdir -p "$build"
build="$(realpath "$build")"
[[ -n "$work" ]] || work="$build/bench-predict"
mkdir -p "$work"
work="$(realpath "$work")"

if [[ -z "$dtf" ]]; then
  for candidate in "$build/cmd/dtf" "$build/dtf" "$repo/build/cmd/dtf"; do
    if [[ -x "$candidate" ]]; then dtf="$candidate"; break; fi
  done
fi
if [[ -z "$dtf" ]]; then
  echo "no dtf binary under $build; pass --dtf PATH" >&2
  exit 2
fi
dtf="$(realpath "$dtf")"
# One copy of the binary for every run: a rebuild meanwhile mixes nothing.
dtf_source="$dtf"
dtf_built="$(date -r "$dtf" -u +%Y-%m-%dT%H:%M:%SZ)"
cp "$dtf" "$work/dtf.bin.tmp" && mv -f "$work/dtf.bin.tmp" "$work/dtf.bin"
dtf="$work/dtf.bin"
dtf_sha256="$(sha256sum "$dtf" | cut -d' ' -f1)"
if ! "$dtf" predict --help 2>&1 | grep -q -- --profile; then
  echo "$dtf has no 'predict --profile'" >&2
  exit 2
fi

python=python3
if wants tf; then
  python="$(bash "$repo/tests/interop/tf_env.sh" "$build")"
fi

# ------------------------------------------------- the job, model and input

write_job

# Records and model, kept while the job, the step count and the binary are
# the same.
stamp="$work/.model-stamp"
want="$(sha256sum "$work/dtf.toml" | cut -d' ' -f1) $train_steps $dtf_sha256"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
  rm -rf "$work/records" "$work/out" "$work/.dtf"
  log "dtf gen-records; dtf train --steps $train_steps"
  "$dtf" gen-records --job "$work/dtf.toml" >&2
  "$dtf" train --job "$work/dtf.toml" --steps "$train_steps" --no-eval --quiet >&2
  echo "$want" > "$stamp"
fi
model="$work/out/model"
saved_model="$model/saved_model"
if wants tf && [[ ! -f "$saved_model/saved_model.pb" ]]; then
  echo "no SavedModel at $saved_model (dtf train writes it)" >&2
  exit 2
fi

# WORK/input: every record file, --copies times, as hard links.
rm -rf "$work/input"
mkdir -p "$work/input"
for ((c = 1; c <= copies; c++)); do
  for f in "$work"/records/*/part-*; do
    split="$(basename "$(dirname "$f")")"
    ln -f "$f" "$work/input/c$c-$split-$(basename "$f")"
  done
done
inputs=("$work"/input/*)
cat "${inputs[@]}" > /dev/null  # the page cache, for every run

# ------------------------------------------------------------- the timings

dtf_one() {
  local name="$1"
  "$dtf" predict --model "$model" --input "$work/input/*" \
    --batch-size "$batch" --threads "$threads" --output "$work/$name.jsonl" \
    > "$work/$name.log" 2>&1 || { tail -20 "$work/$name.log" >&2; return 1; }
}

dtf_profile() {
  local name="$1"
  (cd "$work" && "$dtf" predict --model "$model" --input "$work/input/*" \
    --batch-size "$batch" --threads "$task_threads" --profile local \
    --workers "$workers" --output "$work/$name.jsonl") \
    > "$work/$name.log" 2>&1 || { tail -30 "$work/$name.log" >&2; return 1; }
}

dtf_export() {
  local name="$1"
  rm -rf "$work/export"
  "$dtf" export --model "$model" --format savedmodel --output "$work/export" \
    > "$work/$name.log" 2>&1 || { tail -20 "$work/$name.log" >&2; return 1; }
}

tf_classify() {
  local name="$1"
  "$python" "$here/tf_peer.py" --saved-model "$saved_model" \
    --batch-size "$batch" --threads "$threads" "${inputs[@]}" \
    > "$work/$name.json" 2> "$work/$name.log" ||
    { grep -v 'deprecated\|Instructions for' "$work/$name.log" | tail -20 >&2
      return 1; }
}

# --------------------------------------------------------------------- main

rm -f "$work"/{dtf,tf}-*.{json,jsonl,log,cpu,rc}
rm -rf "$work/export"
rm -rf "$work/.dtf"
log "threads: $threads (tasks: $task_threads each); workers: $workers;" \
  "batch: $batch; copies: $copies; dtf: $dtf_source (built $dtf_built);" \
  "work: $work"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= repeats; r++)); do
  if wants dtf; then
    log "[$r/$repeats] dtf predict, one process"
    measured "dtf-one-r$r" dtf_one "dtf-one-r$r"
    log "[$r/$repeats] dtf predict --profile local --workers $workers"
    measured "dtf-profile-r$r" dtf_profile "dtf-profile-r$r"
    log "[$r/$repeats] dtf export --format savedmodel"
    measured "dtf-export-r$r" dtf_export "dtf-export-r$r"
  fi
  if wants tf; then
    log "[$r/$repeats] tensorflow, SavedModel classify"
    measured "tf-r$r" tf_classify "tf-r$r"
  fi
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

export work repeats workers threads task_threads batch copies
export load_before load_after dtf_source dtf_built dtf_sha256
python3 - <<'PY'
import filecmp
import json
import os

work = os.environ["work"]
repeats = int(os.environ["repeats"])
workers = int(os.environ["workers"])

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def rows(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return None

runs = {"dtf-one": "dtf predict, 1 process",
        "dtf-profile": f"dtf predict --workers {workers}",
        "tf": "TensorFlow SavedModel classify"}
results = {"runs": {}, "config": {
    k: os.environ[k] for k in ("threads", "task_threads", "workers", "batch",
                               "copies", "load_before", "load_after",
                               "dtf_source", "dtf_built", "dtf_sha256")}}
for key, label in runs.items():
    best = None
    for r in range(1, repeats + 1):
        name = f"{key}-r{r}"
        cpu = load(f"{work}/{name}.cpu")
        try:
            rc = int(open(f"{work}/{name}.rc").read())
        except (OSError, ValueError):
            continue
        if cpu is None or rc != 0:
            continue
        if key == "tf":
            out = load(f"{work}/{name}.json") or {}
            examples, seconds = out.get("examples"), out.get("seconds")
        else:
            examples, seconds = rows(f"{work}/{name}.jsonl"), cpu["wall"]
        if not examples or not seconds:
            continue
        run = {"label": label, "repeat": r, "examples": examples,
               "seconds": seconds, "examples_per_sec": examples / seconds,
               "wall": cpu["wall"], "cpu": cpu["cpu"],
               "other_cpu": cpu["other_cpu"]}
        if best is None or run["examples_per_sec"] > best["examples_per_sec"]:
            best = run
    if best is not None:
        results["runs"][key] = best

same = []
for r in range(1, repeats + 1):
    a, b = f"{work}/dtf-one-r{r}.jsonl", f"{work}/dtf-profile-r{r}.jsonl"
    if os.path.exists(a) and os.path.exists(b):
        same.append(filecmp.cmp(a, b, shallow=False))
results["dtf_outputs_identical"] = all(same) if same else None

# dtf export: the best wall time, and the SavedModel's bytes by part.
export_s = []
for r in range(1, repeats + 1):
    cpu = load(f"{work}/dtf-export-r{r}.cpu")
    rc = load(f"{work}/dtf-export-r{r}.rc")
    if cpu is not None and rc == 0:
        export_s.append(cpu["wall"])
if export_s and os.path.isdir(f"{work}/export"):
    parts = {}
    for root, _, files in os.walk(f"{work}/export"):
        for name in files:
            rel = os.path.relpath(os.path.join(root, name), f"{work}/export")
            part = rel if "/" not in rel else rel.split("/")[0] + "/"
            parts[part] = parts.get(part, 0) + os.path.getsize(
                os.path.join(root, name))
    results["export"] = {"seconds": min(export_s),
                         "bytes": sum(parts.values()), "parts": parts}

base = results["runs"].get("dtf-one", {}).get("examples_per_sec")
print(f"{'run':<34} {'examples':>9} {'seconds':>8} {'examples/s':>11} "
      f"{'vs 1 proc':>9} {'cpu s':>7} {'other cpu':>9}")
for key, label in runs.items():
    run = results["runs"].get(key)
    if run is None:
        print(f"{label:<34} {'failed or not run':>9}")
        continue
    ratio = f"{run['examples_per_sec'] / base:.2f}" if base else "-"
    print(f"{label:<34} {run['examples']:>9} {run['seconds']:>8.2f} "
          f"{run['examples_per_sec']:>11.0f} {ratio:>9} {run['cpu']:>7.1f} "
          f"{run['other_cpu']:>9.1f}")
print(f"dtf outputs byte-identical: {results['dtf_outputs_identical']}")
export = results.get("export")
if export:
    parts = ", ".join(f"{k} {v:,}" for k, v in sorted(export["parts"].items()))
    print(f"dtf export --format savedmodel: {export['seconds']:.3f} s, "
          f"{export['bytes']:,} bytes ({parts})")
else:
    print("dtf export --format savedmodel: failed or not run")
print(f"load average before / after: {os.environ['load_before']} / "
      f"{os.environ['load_after']}")
with open(f"{work}/results.json", "w") as f:
    json.dump(results, f, indent=2)
    f.write("\n")
print(f"wrote {work}/results.json")
PY
