#!/usr/bin/env bash
# dtf predict --profile on a Slurm profile, against a real single-node Slurm
# (tests/testing/slurm_cluster.sh). The Titanic example trained for a few
# steps scores its records with 2 workers, each an srun task of one sbatch
# job writing its shard into its task directory under the run directory:
#   1. 2 files over 2 workers (whole files), CSV: byte for byte the
#      one-process output; progress lines reach the launcher; the job ends
#      COMPLETED; every task's exit.json says exited
#   2. 1 file split by records, JSON lines: the same bytes as one process
#   3. a shard that fails (an input that is no TFRecord): exit non-zero, the
#      error names the task and the file, the output is left as it was
#   4. Ctrl-C while the job is held in the queue: scancel, exit non-zero
#   each time: squeue empty, no process of the run left, no shard left
#   beside the output or in the run directory
# Usage: predict_slurm_test.sh DTF SOURCE_DIR SHARED_DIR WORK_DIR
# Exit 77 (skipped) where the cluster cannot be had.
set -uo pipefail
dtf="$(realpath "$1")"
src="$(realpath "$2")"
shared="$(realpath "$3")"
work="$(realpath -m "$4")"
cluster="$src/tests/testing/slurm_cluster.sh"
dir="$(mktemp -d /tmp/dtf-slurm.XXXXXX)"
py=/usr/bin/python3

fail() { echo "FAIL: $*" >&2; exit 1; }
json() {  # json FILE EXPR: a value of a JSON file (EXPR over j)
  "$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

rm -rf "$work"
mkdir -p "$work/titanic/profiles"
out="$(bash "$cluster" start "$dir")"
rc=$?
((rc == 77)) && exit 77
((rc == 0)) || fail "slurm_cluster.sh start exited $rc"
cleanup() {
  [[ -n "${SLURM_CONF:-}" ]] && scancel --user="$(id -un)" 2>/dev/null
  bash "$cluster" stop "$dir"
}
trap cleanup EXIT
eval "$out"

# --- the model ------------------------------------------------------------------
cd "$work/titanic" || fail "cd $work/titanic"
sed "s#csv = \[\"[^\"]*\"\]#csv = [\"$shared/data/titanic/train.csv\"]#" \
  "$src/examples/titanic/dtf.toml" >dtf.toml
"$dtf" gen-records --job dtf.toml >/dev/null || fail "gen-records"
"$dtf" train --job dtf.toml --steps 5 --no-eval --quiet >/dev/null || fail "train"
[[ -d out/model ]] || fail "no model at out/model"
runs="$work/runs"
cat >profiles/slurm.toml <<TOML
backend = "slurm"
workers = 2

[slurm]
nodes = 1
time_limit = "00:10:00"
run_dir = "$runs"
TOML

jobs_in_queue() { squeue -h | wc -l; }
# nothing_left: squeue empty, within 15 s no process runs anything under
# the run directories, and no shard output or index is left.
nothing_left() {
  local deadline=$((SECONDS + 15)) left
  while :; do
    left="$(pgrep -a -f -- "$runs/" || true)"
    [[ -z "$left" && "$(jobs_in_queue)" == 0 ]] && break
    ((SECONDS >= deadline)) && fail "left: processes [$left], squeue [$(squeue -h)]"
    sleep 0.2
  done
  left="$(find "$runs" "$work/titanic" -name '*.shard-*' 2>/dev/null || true)"
  [[ -z "$left" ]] || fail "shard files left: $left"
  echo "ok: squeue empty, no task and no shard left"
}
# last_run: the newest run directory.
last_run() { echo "$runs/$(ls -t "$runs" | head -1)"; }

# same NAME INPUT FORMAT [ARGS...]: one process and the profile's 2 workers
# give the same bytes.
same() {
  local name="$1" input="$2" format="$3" rc=0 run job
  shift 3
  "$dtf" predict --model out/model --input "$input" --format "$format" "$@" \
    --output "$name.one.$format" 2>"$name.one.err" ||
    { cat "$name.one.err" >&2; fail "$name: one-process predict failed"; }
  "$dtf" predict --model out/model --input "$input" --format "$format" "$@" \
    --profile slurm --workers 2 --output "$name.$format" \
    >"$name.out" 2>"$name.err" || rc=$?
  run="$(last_run)"
  if ((rc != 0)); then
    cat "$name.err" >&2
    tail -n 20 "$run"/slurm-*.err "$run"/*/stderr >&2 2>/dev/null
    fail "$name: predict --profile slurm exited $rc"
  fi
  [[ $(wc -c <"$name.one.$format") -gt 1000 ]] || fail "$name: one-process output too small"
  cmp "$name.one.$format" "$name.$format" || fail "$name: outputs differ"
  grep -q "submitted Slurm job" "$name.err" || { cat "$name.err" >&2; fail "$name: no sbatch"; }
  grep -q "records scored (shard 0: " "$name.err" || { cat "$name.err" >&2; fail "$name: no progress"; }
  grep -q "merged 2 shards into $name.$format" "$name.err" || { cat "$name.err" >&2; fail "$name: no merge"; }
  job="$(json "$run/tasks.json" 'j["slurm_job"]')"
  [[ "$job" =~ ^[0-9]+$ ]] || fail "$name: tasks.json slurm_job: $job"
  [[ "$(json "$run/tasks.json" 'j["state"]')" == succeeded ]] ||
    fail "$name: tasks.json: $(cat "$run/tasks.json")"
  # The job ended on its own once both shards were done: not cancelled.
  scontrol show job "$job" | grep -q "JobState=COMPLETED" ||
    fail "$name: job $job: $(scontrol show job "$job" | grep -o 'JobState=[A-Z_]*')"
  for t in worker-0 worker-1; do
    [[ "$(json "$run/$t/exit.json" 'j["state"]')" == exited ]] ||
      fail "$name: $t: $(cat "$run/$t/exit.json")"
  done
  echo "ok: $name: $(wc -l <"$name.$format") lines, the same as one process (job $job COMPLETED)"
  nothing_left
}

# --- 1. whole files ---------------------------------------------------------------
same files_csv 'records/train/*' csv --keep Ticket,Sex

# --- 2. one file split by records ---------------------------------------------------
same records_jsonl 'records/eval/part-00000-of-00002*' jsonl --keep Ticket

# --- 3. a shard that fails ----------------------------------------------------------
# Sorted last, the file that is no TFRecord is worker 0's (files 0 and 2 of
# 3): the run fails naming the task and the file, and the output is left as
# it was.
mkdir -p zzz
{ head -c 64 /dev/zero | tr '\0' x; echo "not a record"; } >zzz/zzz.tfrecord
echo old >kept.csv
rc=0
"$dtf" predict --model out/model --input 'records/train/*' --input zzz/zzz.tfrecord \
  --format csv --profile slurm --workers 2 --output kept.csv >bad.out 2>bad.err || rc=$?
((rc != 0)) || fail "bad: predict succeeded on a file that is no TFRecord"
grep -q "error: task worker:0 exited with status [1-9] on [^ ]* before the run ended" bad.err ||
  { cat bad.err >&2; fail "bad: the error does not name worker:0"; }
grep -q "zzz/zzz.tfrecord: corrupt record" bad.err ||
  { cat bad.err >&2; fail "bad: the error does not name the file"; }
[[ "$(cat kept.csv)" == old ]] || fail "bad: kept.csv changed"
run="$(last_run)"
[[ "$(json "$run/tasks.json" 'j["state"]')" == failed ]] ||
  fail "bad: tasks.json: $(cat "$run/tasks.json")"
echo "ok: bad fails (exit $rc): $(grep -m1 "error: task worker:0" bad.err)"
nothing_left

# --- 4. Ctrl-C while the job waits in the queue ------------------------------------
# A held job stays pending; SIGINT to the launcher cancels it: exit
# non-zero, the output left as it was, nothing in squeue.
cat >profiles/held.toml <<TOML
backend = "slurm"
workers = 2

[slurm]
nodes = 1
time_limit = "00:10:00"
run_dir = "$runs"
sbatch_args = ["--hold"]
TOML
echo old >kept.csv
"$dtf" predict --model out/model --input 'records/train/*' --format csv \
  --profile held --workers 2 --output kept.csv >held.out 2>held.err &
pid=$!
deadline=$((SECONDS + 30))
until grep -q "submitted Slurm job" held.err; do
  ((SECONDS < deadline)) || { cat held.err >&2; fail "held: no job submitted"; }
  sleep 0.2
done
[[ "$(jobs_in_queue)" == 1 ]] || fail "held: squeue: $(squeue -h)"
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
((rc != 0)) || fail "held: predict exited 0 after SIGINT"
grep -q "interrupted" held.err || { cat held.err >&2; fail "held: not interrupted"; }
[[ "$(cat kept.csv)" == old ]] || fail "held: kept.csv changed"
echo "ok: Ctrl-C cancels the pending job (exit $rc)"
nothing_left

echo "PASS"
