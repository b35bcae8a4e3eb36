#!/usr/bin/env bash
# Workers added to a running dtf run on a real single-node Slurm
# (tests/testing/slurm_cluster.sh): the census job, 1 PS and 2 of 3 worker
# slots started (max_workers = 3):
#   1. worker:2 waits in its place in the job step, shown "reserved" by
#      dtf status; `dtf scale RUN --workers 3` starts it mid-run, it takes
#      its input shard over and steps; the run succeeds with accuracy
#      >= 0.85 and worker:2 exited (0) at its end
#   2. a run never scaled ends as any run does: its job completes, the
#      reserved slot stays "reserved", its waiting task ends by itself
# After each: squeue empty, no process of the run left.
# Usage: slurm_scale_test.sh DTF SOURCE_DIR SHARED_DIR WORK_DIR
# Exit 77 (skipped) where the cluster cannot be had.
set -uo pipefail
dtf="$(realpath "$1")"
src="$2"
shared="$(realpath "$3")"
work="$(realpath -m "$4")"
source "$src/tests/launch/slurm/slurm_census.sh"

cat >"$work/census/profiles/scale.toml" <<TOML
backend = "slurm"
ps = 1
workers = 2
max_workers = 3

[slurm]
nodes = 1
time_limit = "00:20:00"
base_port = $port
TOML
launch() { "$dtf" launch --job "$job" --profile scale "$@"; }
newest_run() { ls -t "$runs" 2>/dev/null | head -1; }
task_state() {  # task_state RUN_ID TASK
  json "$runs/$1/tasks.json" "[t['state'] for t in j['tasks'] if t['task'] == '$2'][0]"
}
# stepping_run BEFORE LAUNCHER: the id of the run after BEFORE once its
# worker:1 steps.
stepping_run() {
  local before="$1" launcher="$2" id="" deadline=$((SECONDS + 120))
  until [[ -n "$id" && "$id" != "$before" ]] &&
      grep -q "^step " "$runs/$id/worker-1/stderr" 2>/dev/null; do
    ((SECONDS < deadline)) || { kill "$launcher"; fail "run not stepping"; }
    kill -0 "$launcher" 2>/dev/null || fail "the launcher exited before a step"
    sleep 0.2
    id="$(newest_run)"
  done
  echo "$id"
}

# --- 1. dtf scale starts the reserved slot mid-run ----------------------------
before="$(newest_run)"
launch --set train.epochs=25 --metrics-out "$work/m-scaled.json" \
  >"$work/scaled.out" 2>"$work/scaled.err" &
launcher=$!
id="$(stepping_run "$before" "$launcher")" || exit 1
[[ "$(task_state "$id" worker:2)" == reserved ]] ||
  fail "worker:2 of run $id is $(task_state "$id" worker:2), not reserved"
[[ ! -f "$runs/$id/worker-2/ready" ]] || fail "the reserved worker:2 serves"
"$dtf" status --job "$job" "$id" >"$work/status-before.txt" ||
  fail "dtf status $id"
grep -q "worker:2 .*reserved" "$work/status-before.txt" ||
  { cat "$work/status-before.txt"; fail "dtf status shows no reserved worker:2"; }
"$dtf" scale --job "$job" "$id" --workers 3 --wait 60 \
  >"$work/scale.out" 2>"$work/scale.err" ||
  { show "$work/scale.err" "$runs/$id/worker-2/stderr"; kill "$launcher"; fail "dtf scale"; }
grep -q "started worker:2; 3 of 3 worker slots running" "$work/scale.out" ||
  { cat "$work/scale.out"; fail "dtf scale did not say worker:2 started"; }
wait "$launcher" || {
  show "$work/scaled.err" "$runs/$id"/*/stderr
  fail "the scaled run $id failed"
}
grep -q "started worker:2, a reserved slot waiting in its place in Slurm" \
  "$work/scaled.err" || { cat "$work/scaled.err"; fail "no start note"; }
grep -q "worker:2: first step" "$runs/$id/worker-2/stderr" ||
  { show "$runs/$id/worker-2/stderr"; fail "worker:2 never stepped"; }
grep -q "releases worker:2's input shard to worker:2" "$runs/$id/worker-0/stderr" ||
  { show "$runs/$id/worker-0/stderr"; fail "worker:2's shard was not released to it"; }
[[ "$(task_state "$id" worker:2)" == exited ]] ||
  fail "worker:2 of run $id is $(task_state "$id" worker:2) at the end"
acc="$(accuracy_ok "$work/m-scaled.json")" || exit 1
clean_after "$id"
echo "ok: run $id scaled from 2 to 3 workers mid-run under Slurm, accuracy $acc"

# --- 2. a run never scaled ------------------------------------------------------
before="$(newest_run)"
launch --metrics-out "$work/m-plain.json" >"$work/plain.out" 2>"$work/plain.err" || {
  show "$work/plain.err"
  fail "a run with a reserved slot failed"
}
id="$(newest_run)"
[[ "$id" != "$before" ]] || fail "no new run"
[[ "$(task_state "$id" worker:2)" == reserved ]] ||
  fail "worker:2 of the unscaled run $id is $(task_state "$id" worker:2)"
[[ "$(json "$runs/$id/tasks.json" 'j["state"]')" == succeeded ]] ||
  fail "tasks.json: $(cat "$runs/$id/tasks.json")"
grep -q "worker:2 was never started (a reserved slot: dtf scale)" "$work/plain.err" ||
  { cat "$work/plain.err"; fail "no note of the reserved worker:2's end"; }
grep -q "Slurm job .* CANCELLED\|did not end after scancel" "$work/plain.err" &&
  { cat "$work/plain.err"; fail "the job was cancelled, not completed"; }
acc="$(accuracy_ok "$work/m-plain.json")" || exit 1
clean_after "$id"
echo "ok: run $id with worker:2 reserved and never started, accuracy $acc"
echo "PASS"
