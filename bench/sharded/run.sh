#!/usr/bin/env bash
# bench/sharded/run.sh [--dtf PATH] [--build DIR] [--work DIR]
#   [--buckets N] [--tables N] [--ps N] [--workers N] [--limit-mb MB]
#   [--steps N] [--checkpoint-every N]
#
# Tables larger than any one task, with sharded checkpoints: the census job
# (examples/census) with its hashed `occupation` column, and --tables − 1
# more hashed columns (of native_country, race, gender, relationship), at
# --buckets (16,777,216: dtf's limit for one feature) buckets each,
# embedding 16 and wide (FTRL's two slots on the wide tables, Adagrad's one
# on the embeddings). The default 3 tables hold 50,331,648 rows: about
# 3.4 GB of parameters and 7 GB with slots. On --ps (4) parameter servers
# and --workers (2)
# workers, every `dtf serve` in a memory cgroup of its own limited to
# --limit-mb (3072) MB (cgroup v1 memory.limit_in_bytes, or v2 memory.max;
# swap counted where the kernel lets it be).
# 1. train, sync, train.sharded_checkpoints = true, a checkpoint every
#    --checkpoint-every (30) steps, one generation kept;
# 2. once a checkpoint is committed and training went on past it, every task
#    is killed (SIGKILL);
# 3. every task started again with --restore: each PS restores its shard
#    of the checkpoint, and the run goes on to --steps (40), evaluates and
#    exports (the SavedModel's variables written by the PS);
# 4. `dtf predict` scores the eval records with the export, in a cgroup of
#    the same limit, and (with build/venv-tf) TensorFlow scores them with
#    the SavedModel: both must agree within 1e-5 (tf_score.py).
# For each phase and task: its exit (code or signal; "oom" when the
# cgroup's OOM killer ended it), its peak resident memory (GNU time's
# maximum RSS). And the time of each checkpoint write (the chief's note)
# and of each PS's restore, beside `cp` of the same bytes.
# Prints the table and writes WORK/results.json. Needs root (cgroups),
# /usr/bin/time, and room: about 7 GB of RAM and 7 GB of disk at 50 M.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dtf=""
build="$repo/build"
work=""
buckets=16777216
tables=3
ps=4
workers=2
limit_mb=3072
steps=40
every=30

usage() {
  sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dtf) dtf="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --buckets) buckets="$2"; shift 2 ;;
    --tables) tables="$2"; shift 2 ;;
    --ps) ps="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --limit-mb) limit_mb="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --checkpoint-every) every="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done
for n in buckets tables ps workers limit_mb steps every; do
  [[ "${!n}" =~ ^[1-9][0-9]*$ ]] ||
    { echo "--${n//_/-}: expected a positive integer, got '${!n}'" >&2; exit 2; }
done
log() { echo "bench: $*" >&2; }
(( tables <= 5 )) || { log "--tables: at most 5"; exit 2; }
(( EUID == 0 )) || { log "needs root: every task gets a memory cgroup"; exit 1; }
[[ -x /usr/bin/time ]] || { log "needs /usr/bin/time (GNU time)"; exit 1; }
[[ -n "$dtf" ]] || dtf="$build/cmd/dtf"
[[ -x "$dtf" ]] || { log "no dtf binary at $dtf (--dtf)"; exit 1; }
dtf="$(realpath "$dtf")"
[[ -n "$work" ]] || work="$build/bench-sharded"
mkdir -p "$work/logs"
work="$(realpath "$work")"
shared="$(realpath "$repo/../shared")"

# ------------------------------------------------------------- cgroups
tag="dtf-bench-sharded-$$"
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
  cg_version=2
  cg_root="/sys/fs/cgroup/$tag"
  grep -qw memory /sys/fs/cgroup/cgroup.subtree_control ||
    echo +memory > /sys/fs/cgroup/cgroup.subtree_control
  mkdir "$cg_root"
  echo +memory > "$cg_root/cgroup.subtree_control"
elif [[ -d /sys/fs/cgroup/memory ]]; then
  cg_version=1
  cg_root="/sys/fs/cgroup/memory/$tag"
  mkdir "$cg_root"
else
  log "no memory cgroup controller (neither v1 nor v2)"
  exit 1
fi
cg_procs() { cat "$cg_root"/*/cgroup.procs 2> /dev/null || true; }
cleanup() {
  local rc=$? sig pids
  trap - EXIT
  for sig in TERM KILL; do
    pids="$(cg_procs | tr '\n' ' ')"
    [[ -n "${pids// /}" ]] || break
    # shellcheck disable=SC2086  # a list of pids
    kill -s "$sig" $pids 2> /dev/null || true
    sleep 2
  done
  rmdir "$cg_root"/* "$cg_root" 2> /dev/null || true
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# new_cgroup NAME: a cgroup limited to --limit-mb.
new_cgroup() {
  local cg="$cg_root/$1" bytes=$(( limit_mb * 1024 * 1024 ))
  mkdir "$cg"
  if ((cg_version == 2)); then
    echo "$bytes" > "$cg/memory.max"
    echo 0 > "$cg/memory.swap.max" 2> /dev/null || true
  else
    echo "$bytes" > "$cg/memory.limit_in_bytes"
    echo "$bytes" > "$cg/memory.memsw.limit_in_bytes" 2> /dev/null || true
  fi
}
oom_kills() {
  local cg="$cg_root/$1"
  if ((cg_version == 2)); then
    awk '$1 == "oom_kill" { print $2 }' "$cg/memory.events" 2> /dev/null || echo 0
  else
    awk '$1 == "oom_kill" { print $2 }' "$cg/memory.oom_control" 2> /dev/null || echo 0
  fi
}

# ------------------------------------------------------------- the job
sed -e "s#\.\./\.\./\.\./shared#$shared#g" \
    -e "s#^buckets = 1000\$#buckets = $buckets#" \
    "$repo/examples/census/dtf.toml" > "$work/dtf.toml.new"
python3 - "$work/dtf.toml.new" "$buckets" "$tables" <<'PY'
import re, sys
path, buckets, tables = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(path).read()
# The hashed occupation column: embedding 16 (it is wide already).
text = re.sub(r'(name = "occupation"\nbuckets = \d+\nembedding = )\d+',
              r'\g<1>16', text)
for source in ["native_country", "race", "gender", "relationship"][:tables - 1]:
    text += (f'\n[[features.hashed]]\nname = "{source}_ids"\n'
             f'source = "{source}"\nbuckets = {buckets}\nembedding = 16\n'
             f'wide = true\n')
open(path, "w").write(text)
PY
grep -q "buckets = $buckets" "$work/dtf.toml.new" ||
  { log "examples/census/dtf.toml has no 'buckets = 1000' to change"; exit 1; }
mv "$work/dtf.toml.new" "$work/dtf.toml"
if [[ ! -d "$work/records" ]]; then
  "$dtf" gen-records --job "$work/dtf.toml" > "$work/logs/gen-records.log" 2>&1 ||
    { cat "$work/logs/gen-records.log" >&2; log "dtf gen-records failed"; exit 1; }
fi
rm -rf "$work/out"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/secret"
chmod 600 "$work/secret"
mapfile -t ports < <(python3 - "$((ps + workers))" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in socks))
PY
)
ps_list="" worker_list=""
for ((i = 0; i < ps; i++)); do ps_list+="${ps_list:+,}127.0.0.1:${ports[i]}"; done
for ((i = 0; i < workers; i++)); do
  worker_list+="${worker_list:+,}127.0.0.1:${ports[ps + i]}"
done
run_id="bench-sharded-$$"
sets=(--set train.sharded_checkpoints=true --set "train.steps=$steps"
      --set "train.checkpoint_every_steps=$every" --set train.keep_checkpoints=1
      --set train.mode=sync --set train.log_every_steps=10 --set train.ps_timeout=120
      --set "train.output_dir=$work/out")

# start PHASE NAME ROLE INDEX [FLAGS...]: the task in its cgroup, under GNU
# time (its peak RSS in WORK/logs/PHASE-NAME.time).
pids=() names=()
start() {
  local phase="$1" name="$2" role="$3" index="$4"
  shift 4
  new_cgroup "$phase-$name"
  bash -c 'echo $$ > "$1" || exit 125; shift; exec "$@"' start \
    "$cg_root/$phase-$name/cgroup.procs" \
    /usr/bin/time -v -o "$work/logs/$phase-$name.time" \
    "$dtf" serve --job "$work/dtf.toml" --role "$role" --index "$index" \
    --ps "$ps_list" --workers "$worker_list" --run-id "$run_id" \
    --secret-file "$work/secret" --threads 1 "${sets[@]}" "$@" \
    > "$work/logs/$phase-$name.log" 2>&1 &
  pids+=($!)
  names+=("$name")
}
start_all() {
  pids=() names=()
  for ((i = 0; i < ps; i++)); do start "$1" "ps-$i" ps "$i" "${@:2}"; done
  for ((i = 0; i < workers; i++)); do
    start "$1" "worker-$i" worker "$i" "${@:2}"
  done
}
# wait_all PHASE: every task's exit into WORK/logs/PHASE.exits.
wait_all() {
  local i rc
  : > "$work/logs/$1.exits"
  for i in "${!pids[@]}"; do
    rc=0
    wait "${pids[i]}" || rc=$?
    echo "${names[i]} $rc $(oom_kills "$1-${names[i]}")" >> "$work/logs/$1.exits"
  done
}

# 1. Train until a checkpoint is committed and training went past it.
log "phase 1: $ps PS + $workers workers, $tables tables of $buckets buckets, ${limit_mb} MB each"
t0=$(date +%s)
# Phase 1 is told to train far past --steps, so that on a fast machine it
# cannot reach the end before it is killed.
start_all train --set "train.steps=$((steps * 100))"
ckpt=""
for ((s = 0; s < 3600; s++)); do
  ckpt="$(ls "$work/out"/model.ckpt-*.index 2> /dev/null | head -1 || true)"
  [[ -n "$ckpt" ]] && break
  alive=0
  for p in "${pids[@]}"; do kill -0 "$p" 2> /dev/null && alive=1; done
  ((alive)) || break
  sleep 1
done
if [[ -n "$ckpt" ]]; then
  sleep 2
  log "$(basename "$ckpt") after $(( $(date +%s) - t0 )) s; killing every task"
  # shellcheck disable=SC2046  # a list of pids
  kill -9 $(cg_procs) 2> /dev/null || true
  for ((s = 0; s < 100; s++)); do [[ -z "$(cg_procs)" ]] && break; sleep 0.1; done
else
  log "no checkpoint was committed; see $work/logs"
fi
wait_all train

# 2. Start again from the checkpoint; on to --steps, evaluation, export.
if [[ -n "$ckpt" ]]; then
  log "phase 2: every task again with --restore"
  start_all resume --restore
  wait_all resume
fi

# 3. dtf predict on the export in a cgroup of --limit-mb too (it reads the
# tables' rows on demand); then, with the TensorFlow venv of the interop
# tests (build/venv-tf), TensorFlow's scores of the same records through
# the SavedModel beside dtf predict's (tf_score.py; TensorFlow loads the
# variables whole, so it runs outside the cgroups).
if [[ -f "$work/out/model/model.toml" ]]; then
  log "dtf predict on the export, then TensorFlow on its SavedModel"
  new_cgroup predict-dtf
  rc=0
  bash -c 'echo $$ > "$1" || exit 125; shift; exec "$@"' start \
    "$cg_root/predict-dtf/cgroup.procs" \
    /usr/bin/time -v -o "$work/logs/predict-dtf.time" \
    "$dtf" predict --model "$work/out/model" --input "$work/records/eval/*" \
    --output "$work/predict.jsonl" > "$work/logs/predict-dtf.out" 2>&1 || rc=$?
  echo "dtf $rc $(oom_kills predict-dtf)" > "$work/logs/predict.exits"
  if [[ -x "$build/venv-tf/bin/python" && "$rc" == 0 ]]; then
    "$build/venv-tf/bin/python" "$here/tf_score.py" "$work" \
      > "$work/logs/tf-score.out" 2>&1 ||
      log "TensorFlow's scores are not dtf predict's: $work/logs/tf-score.out"
    grep "^tensorflow:" "$work/logs/tf-score.out" >&2 || true
  fi
fi

# 4. cp of the newest checkpoint's bytes, the peer of its write time.
newest="$(ls -t "$work/out"/model.ckpt-*.index 2> /dev/null | head -1 || true)"
cp_s=""
if [[ -n "$newest" ]]; then
  prefix="${newest%.index}"
  sync
  start_cp=$(date +%s.%N)
  mkdir -p "$work/cp"
  cp --reflink=never "$prefix".data-* "$work/cp/"
  sync
  cp_s=$(python3 -c 'import sys, time; print(round(time.time() - float(sys.argv[1]), 2))' "$start_cp")
  rm -rf "$work/cp"
fi
python3 "$here/report.py" "$work" "$((buckets * tables))" "$ps" "$workers" "$limit_mb" "${cp_s:-}"
