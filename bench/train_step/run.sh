#!/usr/bin/env bash
# bench/train_step/run.sh [--dtf PATH] [--build DIR] [--work DIR] [--threads N]
#   [--batch-sizes 32,1024] [--warmup N] [--dtf-steps N,N] [--keras-steps N,N]
#   [--torch-steps N,N] [--repeats N] [--wait-idle SECONDS]
#   [--only dtf,keras,torch] [--dtf-args "ARGS"]
#
# Training throughput (examples/s) of `dtf train` on the UCI Adult census
# wide & deep model (examples/census/dtf.toml), beside two peers on the same
# records and model, in the same run: TensorFlow Keras built as the original
# job built it (tf.feature_column + DenseFeatures + WideDeepModel, FTRL +
# Adagrad, tf.data over the TFRecords; keras_peer.py) and PyTorch on CPU with
# the same layers (torch_peer.py). For each batch size the three run one
# after the other, each a fixed number of steps after a warm-up that is not
# timed. Prints a table and writes WORK/results.json.
#
# --*-steps take one count per batch size (in --batch-sizes order); the
# defaults give each timed measurement at least ~10 s on a 2-core VM.
# --repeats N runs the whole sequence N times and reports each figure's best
# (on a shared machine other work only ever slows a run down); with
# --wait-idle S each run first waits, at most S seconds, until the rest of
# the machine keeps less than 0.15 cores busy. --dtf-args adds flags to
# every `dtf train` (e.g. "--no-input-cache" for the run without the input
# cache, which `dtf train` keeps by default). --only leaves tools out; the
# peers need no `dtf train`, only records that `dtf gen-records` wrote (or
# that an earlier run left in WORK/records).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
job_src="$repo/examples/census/dtf.toml"

TF_KERAS_VERSION="2.21.0"  # must match tf_env.sh's TensorFlow

dtf=""
build="$repo/build"
work=""
threads=""
batch_sizes="32,1024"
warmup=50
dtf_steps="60000,10000"
keras_steps="3000,1000"
torch_steps="4000,2000"
only="dtf,keras,torch"
repeats=1
wait_idle_s=0
min_seconds=10
dtf_args=""

usage() {
  sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --dtf) dtf="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --batch-sizes) batch_sizes="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --dtf-steps) dtf_steps="$2"; shift 2 ;;
    --keras-steps) keras_steps="$2"; shift 2 ;;
    --torch-steps) torch_steps="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --dtf-args) dtf_args="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --wait-idle) wait_idle_s="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done

log() { echo "bench: $*" >&2; }
# find_dtf, write_job, make_records; measured (and idle.sh's wait_idle).
source "$here/../census_job.sh"
source "$here/../measure.sh"

IFS=, read -r -a batches <<< "$batch_sizes"
IFS=, read -r -a dtf_steps_list <<< "$dtf_steps"
IFS=, read -r -a keras_steps_list <<< "$keras_steps"
IFS=, read -r -a torch_steps_list <<< "$torch_steps"
IFS=, read -r -a tools <<< "$only"
for list in dtf_steps_list keras_steps_list torch_steps_list; do
  declare -n l="$list"
  if [[ ${#l[@]} -ne ${#batches[@]} ]]; then
    echo "--${list%_steps_list}-steps needs one count per batch size" \
      "(${#batches[@]}: $batch_sizes)" >&2
    exit 2
  fi
  unset -n l
done
for tool in "${tools[@]}"; do
  case "$tool" in dtf|keras|torch) ;; *) echo "--only: unknown tool $tool" >&2; exit 2 ;; esac
done
wants() { [[ ",$only," == *",$1,"* ]]; }
if ! [[ "$warmup" =~ ^[0-9]+$ ]] || (( warmup < 1 )); then
  echo "--warmup must be at least 1 (Keras traces its step function then)" >&2
  exit 2
fi

[[ -n "$threads" ]] || threads=$(nproc)
mkdir -p "$build"
build="$(realpath "$build")"
[[ -n "$work" ]] || work="$build/bench-train-step"
mkdir -p "$work"
work="$(realpath "$work")"

[[ -n "$dtf" ]] || dtf="$(find_dtf)"
if [[ -n "$dtf" ]]; then
  dtf="$(realpath "$dtf")"
elif wants dtf || [[ ! -f "$work/records/.stamp" ]]; then
  echo "no dtf binary under $build/cmd; pass --dtf PATH" \
    "(or --only keras,torch with records already in $work/records)" >&2
  exit 2
fi
if wants dtf && ! "$dtf" train --help 2>&1 | grep -q -- --metrics-out; then
  echo "$dtf has no 'train' command (with --metrics-out);" \
    "--only keras,torch runs the peers alone" >&2
  exit 2
fi

# ------------------------------------------------------------ environments

# TensorFlow's venv (tests/interop/tf_env.sh), plus tf_keras: TF 2.21 ships
# Keras 3, which has no feature columns, DenseFeatures or premade models;
# the Keras 2 package provides them under TF_USE_LEGACY_KERAS=1. Installed
# with --no-deps: its dependency is "tensorflow", which would install the
# full wheel over the venv's tensorflow-cpu.
keras_env() {
  python="$(bash "$repo/tests/interop/tf_env.sh" "$build")"
  local venv stamp want
  venv="$(dirname "$(dirname "$python")")"
  stamp="$venv/.dtf-tf-keras-stamp"
  want="tf_keras==$TF_KERAS_VERSION"
  exec 8>"$build/.venv-tf.lock"
  if command -v flock >/dev/null; then flock 8; fi
  if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    log "installing $want into $venv"
    "$python" -m pip install --no-deps "$want" >&2
    TF_USE_LEGACY_KERAS=1 "$python" -c \
      'import tensorflow as tf; tf.keras.layers.DenseFeatures; tf.keras.experimental.WideDeepModel' >&2
    echo "$want" > "$stamp"
  fi
  exec 8>&-
}

# PyTorch: Debian's python3-torch, run by the system python3, with OpenBLAS
# (OpenMP build, so that torch.set_num_threads governs it too): without it
# Debian's libblas.so.3 is the reference BLAS, which makes torch's matrix
# products several times slower (batch 1024: about 4x per step).
torch_env() {
  torch_python=/usr/bin/python3
  local want=()
  "$torch_python" -c 'import torch, numpy' 2>/dev/null || want+=(python3-torch)
  dpkg -s libopenblas0-openmp >/dev/null 2>&1 || want+=(libopenblas0-openmp)
  [[ ${#want[@]} -gt 0 ]] || return 0
  if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null; then
    log "installing ${want[*]}"
    apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${want[@]}" >&2
  else
    echo "missing ${want[*]} (apt-get install ${want[*]})" >&2
    exit 1
  fi
}

python=""
if wants keras; then keras_env; fi
if wants torch; then torch_env; fi
# The report runs under whichever python is at hand.
report_python="${python:-/usr/bin/python3}"

# --------------------------------------------------------------- the input

# ------------------------------------------------------------- the timings

# dtf train from scratch (it resumes from a checkpoint in WORK/out).
dtf_train() {
  local batch="$1" steps="$2" name="$3"
  rm -rf "$work/out"
  "$dtf" train --job "$work/dtf.toml" --batch-size "$batch" --steps "$steps" \
    --threads "$threads" --no-eval --metrics-out "$work/$name.json" \
    ${dtf_args} > "$work/$name.log" 2>&1 || { cat "$work/$name.log" >&2; exit 1; }
}

# dtf's warm-up: two runs, WARMUP steps and WARMUP + STEPS steps; the timed
# figure is STEPS * BATCH over the difference of their wall times, so that
# start-up, the first steps, the checkpoint and the export cancel out, as
# the peers' clocks leave them out. dtf's own examples_per_sec (its step
# loop, all steps) is kept beside it.
bench_dtf() {
  local batch="$1" steps="$2" name="$3"
  log "dtf train, batch $batch: $warmup + $steps steps"
  measured "$name-warmup" dtf_train "$batch" "$warmup" "$name-warmup"
  measured "$name" dtf_train "$batch" "$((warmup + steps))" "$name"
  rm -rf "$work/out"
}

keras_peer() {
  TF_USE_LEGACY_KERAS=1 "$python" "$here/keras_peer.py" --job "$work/dtf.toml" \
    --batch-size "$1" --steps "$2" --warmup "$warmup" --threads "$threads" \
    > "$work/$3.json" 2> "$work/$3.log" || { tail -20 "$work/$3.log" >&2; exit 1; }
}

torch_peer() {
  "$torch_python" "$here/torch_peer.py" --job "$work/dtf.toml" \
    --batch-size "$1" --steps "$2" --warmup "$warmup" --threads "$threads" \
    > "$work/$3.json" 2> "$work/$3.log" || { tail -20 "$work/$3.log" >&2; exit 1; }
}

bench_keras() {
  log "keras, batch $1: $warmup + $2 steps"
  measured "$3" keras_peer "$@"
}

bench_torch() {
  log "pytorch, batch $1: $warmup + $2 steps"
  measured "$3" torch_peer "$@"
}

# --------------------------------------------------------------------- main

write_job
make_records
cat "$work"/records/train/* > /dev/null  # the page cache, for every tool
log "threads: $threads; dtf: ${dtf:-none}; work: $work"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"

rm -f "$work"/{dtf,keras,torch}-b*.{json,log,cpu}
for ((r = 1; r <= repeats; r++)); do
  for i in "${!batches[@]}"; do
    b="${batches[$i]}"
    if wants dtf; then bench_dtf "$b" "${dtf_steps_list[$i]}" "dtf-b$b-r$r"; fi
    if wants keras; then bench_keras "$b" "${keras_steps_list[$i]}" "keras-b$b-r$r"; fi
    if wants torch; then bench_torch "$b" "${torch_steps_list[$i]}" "torch-b$b-r$r"; fi
  done
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

export work threads warmup batch_sizes only min_seconds repeats
export load_before load_after dtf_steps keras_steps torch_steps
"$report_python" "$here/report.py"
