#!/usr/bin/env bash
# bench/cluster_train/run.sh [--dtf PATH] [--build DIR] [--work DIR]
#   [--epochs N] [--batch-size N] [--threads N] [--layouts 1:1,2:2]
#   [--allreduce 2] [--tf-epoch-steps N] [--tf-epochs N] [--repeats N] [--wait-idle SECONDS]
#   [--only dtf,tf] [--tls] [--tls-host ADDRESS]
#
# Examples/s of the census wide & deep job (examples/census/dtf.toml) trained
# by dtf in one process (`dtf train`) and as a cluster of local processes
# (`dtf launch --ps P --workers W`, foreground, local backend), beside
# TensorFlow's own parameter-server training of the same Keras model in the
# same layouts (ParameterServerStrategy + ClusterCoordinator, tf_ps_peer.py);
# and, for each --allreduce worker count, dtf's allreduce on CPU workers
# (`dtf launch --workers W` with train.mode = "allreduce", train.device =
# "cpu": Gloo) beside TensorFlow's MultiWorkerMirroredStrategy on CPUs
# (tf_mwms_peer.py).
# Prints a table (examples/s in all and per worker, ratio to one-process dtf,
# dtf / TensorFlow in the same layout) and writes WORK/results.json.
#
# --layouts: PS:WORKERS pairs; --allreduce: worker counts of allreduce
# layouts (default 2; "none": no allreduce layout). dtf trains --epochs epochs (default 3) in every
# run; TensorFlow one warm-up Keras epoch and --tf-epochs (default: --epochs)
# timed Keras epochs of --tf-epoch-steps steps (default: one pass over the
# training split). --repeats N runs the whole sequence N times and reports
# each figure's best; --wait-idle S first waits, at most S seconds, until the
# rest of the machine keeps under 0.15 cores busy. --only leaves tools out.
# --tls: each dtf launch layout is run again with mutual TLS between its
# tasks (a profile with tls = true), right after the plaintext run, and a
# table of the chief's examples/s with TLS beside plaintext follows; each
# --allreduce layout is run twice more with every worker on --tls-host (a
# network address of this machine; default: the first of `hostname -I`),
# with tls = false (Gloo, cleartext) and with TLS (the TLS ring), and its
# pairs join the table.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
job_src="$repo/examples/census/dtf.toml"

TF_KERAS_VERSION="2.21.0"  # must match tf_env.sh's TensorFlow

dtf=""
build="$repo/build"
work=""
epochs=3
batch=256
threads=""
layouts="1:1,2:2"
allreduce="2"
tf_epoch_steps=""
tf_epochs=""
repeats=1
wait_idle_s=0
only="dtf,tf"
tls=0
tls_host=""
tf_timeout_s=1800

usage() {
  sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --dtf) dtf="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --batch-size) batch="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --layouts) layouts="$2"; shift 2 ;;
    --allreduce) allreduce="$2"; shift 2 ;;
    --tf-epoch-steps) tf_epoch_steps="$2"; shift 2 ;;
    --tf-epochs) tf_epochs="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --wait-idle) wait_idle_s="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --tls) tls=1; shift ;;
    --tls-host) tls_host="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done

log() { echo "bench: $*" >&2; }
# find_dtf, write_job, make_records; measured (and idle.sh's wait_idle).
source "$here/../census_job.sh"
source "$here/../measure.sh"

for n in epochs batch repeats; do
  declare -n v="$n"
  if ! [[ "$v" =~ ^[0-9]+$ ]] || (( v < 1 )); then
    echo "--${n/batch/batch-size} must be a positive integer, got '$v'" >&2
    exit 2
  fi
  unset -n v
done
IFS=, read -r -a layout_list <<< "$layouts"
for l in "${layout_list[@]}"; do
  [[ "$l" =~ ^[1-9][0-9]*:[1-9][0-9]*$ ]] ||
    { echo "--layouts: expected PS:WORKERS, got '$l'" >&2; exit 2; }
done
[[ "$allreduce" != none ]] || allreduce=""
IFS=, read -r -a allreduce_list <<< "$allreduce"
for w in "${allreduce_list[@]}"; do
  [[ "$w" =~ ^[1-9][0-9]*$ ]] ||
    { echo "--allreduce: expected worker counts, got '$w'" >&2; exit 2; }
done
IFS=, read -r -a tools <<< "$only"
for tool in "${tools[@]}"; do
  case "$tool" in dtf|tf) ;; *) echo "--only: unknown tool $tool" >&2; exit 2 ;; esac
done
wants() { [[ ",$only," == *",$1,"* ]]; }
[[ -n "$tf_epochs" ]] || tf_epochs="$epochs"

[[ -n "$threads" ]] || threads=$(nproc)
mkdir -p "$build"
build="$(realpath "$build")"
[[ -n "$work" ]] || work="$build/bench-cluster-train"
mkdir -p "$work"
work="$(realpath "$work")"

[[ -n "$dtf" ]] || dtf="$(find_dtf)"
if [[ -z "$dtf" ]]; then
  echo "no dtf binary under $build/cmd; pass --dtf PATH" >&2
  exit 2
fi
dtf="$(realpath "$dtf")"
# Every run uses one copy of the binary, taken now: a rebuild of $dtf during
# the benchmark (a shared build directory) does not mix two versions.
dtf_source="$dtf"
dtf_built="$(date -r "$dtf" -u +%Y-%m-%dT%H:%M:%SZ)"
cp "$dtf" "$work/dtf.bin.tmp" && mv -f "$work/dtf.bin.tmp" "$work/dtf.bin"
dtf="$work/dtf.bin"
dtf_sha256="$(sha256sum "$dtf" | cut -d' ' -f1)"
for cmd in train launch; do
  if ! "$dtf" "$cmd" --help 2>&1 | grep -q -- --metrics-out; then
    echo "$dtf has no '$cmd' command (with --metrics-out)" >&2
    exit 2
  fi
done

# ------------------------------------------------------------ environments

# TensorFlow's venv (tests/interop/tf_env.sh) plus tf_keras (Keras 2, for
# feature columns and WideDeepModel), as bench/train_step/run.sh sets it up;
# installed with --no-deps, or it would pull the full tensorflow wheel over
# the venv's tensorflow-cpu.
# The report needs only the standard library: without tf, no venv.
python=python3
if wants tf; then
  python="$(bash "$repo/tests/interop/tf_env.sh" "$build")"
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
fi

# --------------------------------------------------------------- the input

# ------------------------------------------------------------- the timings

# One process: dtf's own examples_per_sec (its step loop: input included,
# evaluation excluded; --no-eval anyway).
dtf_train() {
  local name="$1"
  "$dtf" train --job "$work/dtf.toml" --batch-size "$batch" --epochs "$epochs" \
    --threads "$threads" --no-eval --restart --metrics-out "$work/$name.json" \
    > "$work/$name.log" 2>&1 || { tail -20 "$work/$name.log" >&2; return 1; }
}

# A cluster: `dtf launch` in the foreground; the chief's metrics go to
# NAME.json, every task's output to the run directory (WORK/.dtf/runs/ID),
# whose id NAME.run records. Evaluation stays on (after every epoch, on the
# chief): the workers' figures count step time only. PS 0: no --ps (an
# allreduce layout, whose mode comes in the extra arguments).
dtf_launch() {
  local name="$1" ps="$2" workers="$3" id ps_arg=()
  shift 3
  ((ps == 0)) || ps_arg=(--ps "$ps")
  "$dtf" launch --job "$work/dtf.toml" "${ps_arg[@]}" --workers "$workers" "$@" \
    --set "train.batch_size=$batch" --set "train.epochs=$epochs" \
    --set "train.threads=$threads" --metrics-out "$work/$name.json" \
    > "$work/$name.log" 2>&1 || { tail -30 "$work/$name.log" >&2; return 1; }
  id=$(sed -n 's/^dtf: run \([^ ]*\) succeeded$/\1/p' "$work/$name.log" | tail -1)
  [[ -n "$id" ]] || { echo "no run id in $work/$name.log" >&2; return 1; }
  echo "$id" > "$work/$name.run"
}

tf_ps() {
  local name="$1" ps="$2" workers="$3"
  local steps_arg=()
  [[ -z "$tf_epoch_steps" ]] || steps_arg=(--epoch-steps "$tf_epoch_steps")
  rm -rf "$work/$name.tasks"
  timeout "$tf_timeout_s" env TF_USE_LEGACY_KERAS=1 "$python" "$here/tf_ps_peer.py" \
    --job "$work/dtf.toml" --ps "$ps" --workers "$workers" \
    --batch-size "$batch" "${steps_arg[@]}" --warmup-epochs 1 \
    --epochs "$tf_epochs" --threads "$threads" --log-dir "$work/$name.tasks" \
    > "$work/$name.json" 2> "$work/$name.log" ||
    { grep -v 'deprecated\|Instructions for\|Use Keras\|Use `tf' "$work/$name.log" |
        tail -20 >&2; return 1; }
}

tf_mwms() {
  local name="$1" workers="$2"
  rm -rf "$work/$name.tasks"
  timeout "$tf_timeout_s" env TF_USE_LEGACY_KERAS=1 "$python" "$here/tf_mwms_peer.py" \
    --job "$work/dtf.toml" --workers "$workers" --batch-size "$batch" \
    --epoch-steps "$tf_epoch_steps" --warmup-epochs 1 --epochs "$tf_epochs" \
    --threads "$threads" --log-dir "$work/$name.tasks" \
    > "$work/$name.json" 2> "$work/$name.log" ||
    { grep -v 'deprecated\|Instructions for\|Use Keras\|Use `tf' "$work/$name.log" |
        tail -20 >&2; return 1; }
}

# --------------------------------------------------------------------- main

write_job
make_records
if [[ -z "$tf_epoch_steps" ]]; then
  # One pass over the training split in all: as many examples per Keras
  # epoch as one dtf epoch.
  train_rows=$("$dtf" inspect "$work"/records/train/part-* | wc -l)
  tf_epoch_steps=$(( (train_rows + batch - 1) / batch ))
fi
cat "$work"/records/*/* > /dev/null  # the page cache, for every run
rm -rf "$work/.dtf" "$work/out"
rm -f "$work"/{dtf,tf}-*.{json,log,cpu,rc,run}
rm -rf "$work"/tf-*.tasks
log "threads: $threads; batch: $batch; dtf: $dtf_source (built $dtf_built," \
  "copied to $dtf); work: $work"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
if ((tls)); then
  [[ -n "$tls_host" ]] || tls_host="$(hostname -I | awk '{ print $1 }')"
  [[ -n "$tls_host" && ! "$tls_host" =~ ^127\. ]] ||
    { echo "--tls: no network address for the allreduce pairs (--tls-host)" >&2; exit 2; }
  printf 'host = "%s"\ntls = false\n' "$tls_host" > "$work/arplain.toml"
  printf 'host = "%s"\n' "$tls_host" > "$work/artls.toml"
fi

for ((r = 1; r <= repeats; r++)); do
  if wants dtf; then
    log "[$r/$repeats] dtf train: $epochs epochs"
    measured "dtf-train-r$r" dtf_train "dtf-train-r$r"
    for l in "${layout_list[@]}"; do
      ps="${l%:*}" workers="${l#*:}"
      log "[$r/$repeats] dtf launch --ps $ps --workers $workers: $epochs epochs"
      measured "dtf-launch-$ps-$workers-r$r" dtf_launch \
        "dtf-launch-$ps-$workers-r$r" "$ps" "$workers"
      if ((tls)); then
        printf 'tls = true\n' > "$work/tls.toml"
        log "[$r/$repeats] dtf launch --ps $ps --workers $workers, mutual TLS"
        measured "dtf-tls-$ps-$workers-r$r" dtf_launch \
          "dtf-tls-$ps-$workers-r$r" "$ps" "$workers" --profile "$work/tls.toml"
      fi
    done
    for w in "${allreduce_list[@]}"; do
      log "[$r/$repeats] dtf launch --workers $w, allreduce on CPUs: $epochs epochs"
      measured "dtf-allreduce-$w-r$r" dtf_launch "dtf-allreduce-$w-r$r" 0 "$w" \
        --set train.mode=allreduce --set train.device=cpu
      ((tls)) || continue
      for kind in arplain artls; do
        log "[$r/$repeats] dtf launch --workers $w, allreduce on $tls_host:" \
          "$([[ $kind == artls ]] && echo "the TLS ring" || echo "Gloo, tls = false")"
        measured "dtf-$kind-$w-r$r" dtf_launch "dtf-$kind-$w-r$r" 0 "$w" \
          --profile "$work/$kind.toml" --set train.mode=allreduce \
          --set train.device=cpu
      done
      grep -q 'joined the TLS ring collective' "$work/dtf-artls-$w-r$r.log" ||
        { echo "dtf-artls-$w-r$r: not over the TLS ring" >&2; exit 1; }
      grep -q 'joined the Gloo collective' "$work/dtf-arplain-$w-r$r.log" ||
        { echo "dtf-arplain-$w-r$r: not over Gloo" >&2; exit 1; }
    done
  fi
  if wants tf; then
    for l in "${layout_list[@]}"; do
      ps="${l%:*}" workers="${l#*:}"
      log "[$r/$repeats] tensorflow ParameterServerStrategy, $ps PS + $workers" \
        "workers: (1 + $tf_epochs) x $tf_epoch_steps steps"
      measured "tf-ps-$ps-$workers-r$r" tf_ps "tf-ps-$ps-$workers-r$r" "$ps" "$workers"
    done
    for w in "${allreduce_list[@]}"; do
      log "[$r/$repeats] tensorflow MultiWorkerMirroredStrategy, $w workers:" \
        "(1 + $tf_epochs) x $tf_epoch_steps steps"
      measured "tf-mwms-$w-r$r" tf_mwms "tf-mwms-$w-r$r" "$w"
    done
  fi
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

export work threads batch epochs layouts allreduce repeats only tf_epochs
export tf_epoch_steps
export load_before load_after dtf_source dtf_built dtf_sha256
"$python" "$here/report.py"

((tls)) || exit 0
# The chief's examples/s with mutual TLS beside plaintext, each pair run
# back to back.
export work repeats layouts allreduce tls_host
"$python" - <<'PY'
import json
import os
from statistics import median

work, repeats = os.environ["work"], int(os.environ["repeats"])


def pairs(label, plain_name, tls_name):
    ratios = []
    for r in range(1, repeats + 1):
        try:
            with open(f"{work}/{plain_name}-r{r}.json") as f:
                plain = json.load(f)["examples_per_sec"]
            with open(f"{work}/{tls_name}-r{r}.json") as f:
                tls = json.load(f)["examples_per_sec"]
        except (OSError, KeyError, ValueError):
            print(f"{label}, repeat {r}: a run failed")
            continue
        ratios.append(tls / plain)
        print(f"{f'{label}, r{r}':<36} {plain:>9.0f} {tls:>9.0f} "
              f"{tls / plain:>12.2f}")
    if ratios:
        print(f"{label:<36} median TLS / plain {median(ratios):.2f}")


print()
print(f"{'chief examples/s':<36} {'plain':>9} {'TLS':>9} {'TLS / plain':>12}")
for layout in os.environ["layouts"].split(","):
    ps, workers = layout.split(":")
    pairs(f"{ps} PS x {workers} workers", f"dtf-launch-{ps}-{workers}",
          f"dtf-tls-{ps}-{workers}")
if os.environ["allreduce"]:
    for w in os.environ["allreduce"].split(","):
        pairs(f"allreduce {w} workers on {os.environ['tls_host']}",
              f"dtf-arplain-{w}", f"dtf-artls-{w}")
PY