#!/usr/bin/env bash
# Restarts and resumes of dtf runs on a real single-node Slurm
# (tests/testing/slurm_cluster.sh, started once for every case); the census
# job, 1 PS + 2 workers, checkpoints every 50 steps:
#   1. max_restarts = 1: worker:1's dtf serve killed mid-run is started
#      again in a job step of its own (srun --overlap), with the profile's
#      [env] (its input trace goes on), and the run succeeds with accuracy
#      >= 0.85; `dtf status` counts the restart; then the same for ps:0
#   2. a run cancelled with scancel (not dtf stop) goes on with
#      `dtf launch --resume` from its checkpoint to accuracy >= 0.85
#   3. max_restarts = 0: a worker killed mid-run fails the run
#      (--kill-on-bad-exit); `dtf launch --resume` finishes it
# After each: squeue empty, no process of the run left.
# Usage: slurm_restart_test.sh DTF SOURCE_DIR SHARED_DIR WORK_DIR
# Exit 77 (skipped) where the cluster cannot be had.
set -uo pipefail
dtf="$(realpath "$1")"
src="$2"
shared="$(realpath "$3")"
work="$(realpath -m "$4")"
source "$src/tests/launch/slurm/slurm_census.sh"

for restarts in 0 1; do
  cat >"$work/census/profiles/r$restarts.toml" <<TOML
backend = "slurm"
ps = 1
workers = 2
max_restarts = $restarts

[slurm]
nodes = 1
time_limit = "00:20:00"
base_port = $port

[env]
DTF_TEST_INPUT_TRACE = "fnlwgt@$work/trace-r$restarts"
TOML
  mkdir -p "$work/trace-r$restarts"
done
# Long enough to kill a task mid-run (about 6 s of training here).
sets=(--set train.epochs=25 --set train.checkpoint_every_steps=50)
launch() { "$dtf" launch --job "$job" "$@"; }
status_json() { "$dtf" status --job "$job" --json "$1"; }
newest_run() { ls -t "$runs" 2>/dev/null | head -1; }
# stepping RUN_ID: its workers step, and it has a checkpoint of its own.
stepping() {
  grep -q "^step " "$runs/$1/worker-1/stderr" 2>/dev/null &&
    [[ -n "$(find "$work/census/out" -name 'checkpoint-*.dtf' \
      -newer "$runs/$1/plan.json" 2>/dev/null)" ]]
}
# kill_mid_run LAUNCHER_PID ROLE INDEX BEFORE: once the run after BEFORE
# steps, SIGKILL the dtf serve (not the `dtf task slurm`) of its task
# ROLE:INDEX; prints the run id.
kill_mid_run() {
  local launcher="$1" role="$2" index="$3" before="$4" id="" deadline
  deadline=$((SECONDS + 120))
  until [[ -n "$id" && "$id" != "$before" ]] && stepping "$id"; do
    ((SECONDS < deadline)) || { kill "$launcher"; fail "run not stepping"; }
    sleep 0.2
    id="$(newest_run)"
  done
  pkill -KILL -f -- "serve .*--role $role --index $index .*--run-id $id" ||
    fail "no $role:$index serve process of run $id (did it end already?)"
  echo "$id"
}

# --- 1. a task killed mid-run is started again -------------------------------
for task in worker:1 ps:0; do
  role="${task%:*}"
  index="${task#*:}"
  before="$(newest_run)"
  launch --profile r1 "${sets[@]}" --metrics-out "$work/m-$role.json" \
    >"$work/r-$role.out" 2>"$work/r-$role.err" &
  launcher=$!
  id="$(kill_mid_run "$launcher" "$role" "$index" "$before")" || exit 1
  wait "$launcher" || {
    show "$work/r-$role.err" "$runs/$id/$role-$index/srun.err" "$runs/$id"/*/stderr
    fail "the run whose $task was killed failed"
  }
  grep -q "$task killed by SIGKILL on .*; starting it again (1 of 1 restarts)" \
    "$work/r-$role.err" || { cat "$work/r-$role.err"; fail "no restart note"; }
  grep -q "started $task again on .* in a job step of its own (srun --overlap" \
    "$work/r-$role.err" || { cat "$work/r-$role.err"; fail "no srun --overlap note"; }
  status_json "$id" >"$work/status-$role.json" || fail "dtf status $id"
  restarts="$(json "$work/status-$role.json" \
    "[t['restarts'] for t in j['tasks'] if t['task'] == '$task'][0]")"
  [[ "$restarts" == 1 ]] || fail "dtf status counts $restarts restarts of $task"
  [[ "$(json "$work/status-$role.json" 'j["state"]')" == succeeded ]] ||
    fail "status: $(cat "$work/status-$role.json")"
  # The replacement took the task's place and appended to its log.
  grep -q "$task: \(resuming at global step\|restoring from\)" \
    "$runs/$id/$role-$index/stderr" ||
    { show "$runs/$id/$role-$index/stderr"; fail "$task did not restore"; }
  # The task started again has the profile's [env]: its trace goes on.
  if [[ "$task" == worker:1 ]]; then
    starts="$(grep -c '^start ' "$work/trace-r1/worker-1.trace")"
    [[ "$starts" == 2 ]] || fail "worker:1's input trace has $starts start lines, not 2: the task started again lacks the profile's [env]"
  fi
  acc="$(accuracy_ok "$work/m-$role.json")" || exit 1
  clean_after "$id"
  echo "ok: $task killed mid-run, started again in the allocation, accuracy $acc"
done

# --- 2. scancel, then dtf launch --resume --------------------------------------
id="$(launch --profile r0 --detach "${sets[@]}" \
  --metrics-out "$work/m-cancel.json" 2>"$work/cancel.err")" ||
  { show "$work/cancel.err"; fail "detached launch"; }
deadline=$((SECONDS + 120))
until [[ "$(json "$runs/$id/tasks.json" 'j.get("slurm_job", "")')" != "" ]] &&
    stepping "$id"; do
  ((SECONDS < deadline)) || fail "run $id made no checkpoint"
  sleep 0.2
done
scancel "$(json "$runs/$id/tasks.json" 'j["slurm_job"]')"
deadline=$((SECONDS + 60))
until [[ "$(json "$runs/$id/tasks.json" 'j["state"]')" != running ]]; do
  ((SECONDS < deadline)) || fail "run $id still running after scancel"
  sleep 0.3
done
clean_after "$id"
launch --resume "$id" >"$work/resume1.out" 2>"$work/resume1.err" || {
  show "$work/resume1.err" "$runs/$id"/*/stderr
  fail "dtf launch --resume of the cancelled run $id"
}
grep -q "worker:1: resuming at global step" "$runs/$id/worker-1/stderr" ||
  { show "$runs/$id/worker-1/stderr"; fail "worker:1 did not resume"; }
acc="$(accuracy_ok "$work/m-cancel.json")" || exit 1
[[ "$(json "$runs/$id/tasks.json" 'j["state"]')" == succeeded ]] ||
  fail "tasks.json after the resume: $(cat "$runs/$id/tasks.json")"
clean_after "$id"
echo "ok: run $id cancelled with scancel, resumed to accuracy $acc"

# --- 3. a failed run, then dtf launch --resume ---------------------------------
before="$(newest_run)"
launch --profile r0 "${sets[@]}" --metrics-out "$work/m-failed.json" \
  >"$work/failed.out" 2>"$work/failed.err" &
launcher=$!
id="$(kill_mid_run "$launcher" worker 1 "$before")" || exit 1
wait "$launcher" && fail "a run whose worker was killed (max_restarts = 0) succeeded"
grep -q "Slurm ends the job step when a task fails" "$work/failed.err" ||
  { cat "$work/failed.err"; fail "the failure does not name the step's end"; }
clean_after "$id"
launch --resume "$id" >"$work/resume2.out" 2>"$work/resume2.err" || {
  show "$work/resume2.err" "$runs/$id"/*/stderr
  fail "dtf launch --resume of the failed run $id"
}
acc="$(accuracy_ok "$work/m-failed.json")" || exit 1
clean_after "$id"
echo "ok: run $id failed, resumed to accuracy $acc"
echo "PASS"
