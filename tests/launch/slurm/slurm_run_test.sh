#!/usr/bin/env bash
# A dtf run under a real single-node Slurm (tests/testing/slurm_cluster.sh):
# the census job on 1 parameter server and 2 workers, submitted with the
# batch script RenderBatchScript writes, each srun task running
# `dtf task slurm`; then a batch job cancelled with scancel mid-run.
# Usage: slurm_run_test.sh DTF PROBE SOURCE_DIR SHARED_DIR WORK_DIR
# Exit 77 (skipped) where the cluster cannot be had (not root, no apt-get).
set -uo pipefail
dtf="$(realpath "$1")"
probe="$(realpath "$2")"
src="$3"
shared="$(realpath "$4")"
work="$(realpath -m "$5")"
cluster="$src/tests/testing/slurm_cluster.sh"
dir="$(mktemp -d /tmp/dtf-slurm.XXXXXX)"

fail() { echo "FAIL: $*" >&2; exit 1; }
show() {
  local f
  for f in "$@"; do
    [[ -f "$f" ]] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
  done
}

rm -rf "$work"
mkdir -p "$work/census" "$work/runs"
out="$(bash "$cluster" start "$dir")"
rc=$?
((rc == 77)) && exit 77
((rc == 0)) || fail "slurm_cluster.sh start exited $rc"
trap 'bash "$cluster" stop "$dir"' EXIT
eval "$out"

job="$work/census/dtf.toml"
sed "s#\.\./\.\./\.\./shared#$shared#g" "$src/examples/census/dtf.toml" >"$job"
(cd "$work/census" && "$dtf" gen-records --job "$job" >/dev/null) ||
  fail "gen-records"

# submit RUN_ID SET...: the run's directory and secret, its batch script,
# sbatch; prints the job id.
submit() {
  local id="$1" run_dir="$work/runs/$1"
  shift
  mkdir -p "$run_dir"
  (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$run_dir/secret")
  "$probe" script 1 2 "$((20000 + RANDOM % 20000))" "$run_dir" "$dtf" "$job" \
    "$id" "$@" >"$run_dir/sbatch.sh" || fail "render the batch script"
  (cd "$run_dir" && sbatch --parsable sbatch.sh) || fail "sbatch"
}

# state JOB: Slurm's state of a job.
state() {
  scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2
}

# wait_done JOB SECONDS: until the job has ended; prints its state.
wait_done() {
  local deadline=$((SECONDS + $2)) s
  while :; do
    s="$(state "$1")"
    case "$s" in
      COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY)
        echo "$s"
        return 0
        ;;
    esac
    ((SECONDS < deadline)) || { echo "$s"; return 1; }
    sleep 0.5
  done
}

# --- A run to its end -------------------------------------------------------
start=$SECONDS
run="$work/runs/r1"
job_id="$(submit r1 train.steps=60)"
s="$(wait_done "$job_id" 600)" || {
  show "$run"/slurm-*.err "$run"/*/stderr
  scancel "$job_id"
  fail "job $job_id not done in 600 s ($s)"
}
if [[ "$s" != COMPLETED ]]; then
  show "$run"/slurm-*.out "$run"/slurm-*.err "$run"/*/stderr
  fail "job $job_id: $s"
fi
echo "ok: batch job $job_id completed in $((SECONDS - start)) s"
for task in ps-0 worker-0 worker-1; do
  [[ -f "$run/$task/exit.json" ]] || fail "$task: no exit.json"
  grep -q '"state": *"exited"' "$run/$task/exit.json" ||
    fail "$task: $(cat "$run/$task/exit.json")"
  [[ -s "$run/$task/ready" ]] || fail "$task: no ready file"
done
host="$(hostname -s)"
grep -q "^$host:" "$run/worker-1/ready" ||
  fail "worker-1 ready file: $(cat "$run/worker-1/ready")"
[[ ! -s "$(ls "$run"/slurm-*.err)" ]] ||
  fail "batch stderr: $(cat "$run"/slurm-*.err)"
echo "ok: every task exited 0 with its ready file and exit.json"

# --- scancel mid-run --------------------------------------------------------
run="$work/runs/r2"
job_id="$(submit r2 train.steps=1000000)"
deadline=$((SECONDS + 300))
until [[ -s "$run/worker-1/ready" && -s "$run/ps-0/ready" ]]; do
  ((SECONDS < deadline)) || {
    show "$run"/*/stderr
    scancel "$job_id"
    fail "r2: tasks not ready in 300 s"
  }
  sleep 0.5
done
scancel "$job_id"
s="$(wait_done "$job_id" 120)" || fail "job $job_id not ended 120 s after scancel"
[[ "$s" == CANCELLED ]] || fail "job $job_id after scancel: $s"
deadline=$((SECONDS + 30))
until [[ -f "$run/worker-0/exit.json" && -f "$run/ps-0/exit.json" ]]; do
  ((SECONDS < deadline)) || break
  sleep 0.2
done
for task in worker-0 worker-1; do
  grep -q '"state": *"stopped"' "$run/$task/exit.json" ||
    fail "$task after scancel: $(cat "$run/$task/exit.json" 2>/dev/null)"
done
# The parameter server is told by the chief to exit as it stops, or is
# stopped by Slurm first.
grep -Eq '"state": *"(exited|stopped)"' "$run/ps-0/exit.json" ||
  fail "ps-0 after scancel: $(cat "$run/ps-0/exit.json" 2>/dev/null)"
left="$(pgrep -a -f -- "--run-id r2" || true)"
[[ -z "$left" ]] || fail "processes of r2 left after scancel: $left"
echo "ok: scancel ends every task, none left behind"
echo "PASS"
