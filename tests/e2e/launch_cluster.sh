#!/usr/bin/env bash
# tests/e2e/launch_cluster.sh DTF SHARED_DIR BUILD_DIR WORK_DIR
#
# A real cluster on loopback through the binary: `dtf launch` runs parameter
# servers and workers (`dtf serve`) as processes on this machine, on the
# census wide & deep job (examples/census) over the UCI Adult files.
#   1. the job, its CSV paths made absolute; dtf gen-records --job
#   2. sync, 2 PS x 2 workers, in the foreground: exits 0, accuracy >= 0.85
#      on all 16,281 rows of adult.test, every task's exit.json says 0, and
#      no process of the run is left
#   3. the same with train.mode=async
#   4. sync, detached: worker:1 is killed with SIGKILL mid-run; the run goes
#      on with the rest (train.heartbeat_timeout=3), the chief exits 0 with
#      accuracy >= 0.84, status reports worker:1 failed (137), and no process
#      of the run is left
#   4b. sync, detached, a profile with max_restarts = 1 and a checkpoint
#      every 100 steps: ps:1 is killed with SIGKILL once a checkpoint exists;
#      the launcher starts it again, it restores its partition of the
#      checkpoint (variables and optimizer slots), the workers carry on, the
#      run succeeds with accuracy >= 0.84 and status counts 1 restart
#   5. TensorBoard (the venv of tests/interop/tf_env.sh) loads the sync run's
#      events: loss, examples_per_sec, eval/{accuracy,auc,loss}, the last
#      eval/accuracy >= 0.85
#   6. `dtf launch --dry-run --json` twice gives the same bytes
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/e2e_lib.sh"
e2e_start "DTF SHARED_DIR BUILD_DIR WORK_DIR" "$@"

py=/usr/bin/python3
detached_run=""  # a detached run in flight, stopped if this script fails

cleanup() {
  if [[ -n "$detached_run" ]]; then
    echo "stopping run $detached_run" >&2
    "$dtf" stop --job "$job" "$detached_run" >&2 || true
  fi
}
trap cleanup EXIT

# runs: the run ids recorded beside the job, one per line.
runs() {
  ls "$work/census/.dtf/runs" 2>/dev/null | sort || true
}

# new_run BEFORE: the one run id not in BEFORE (a `runs` output).
new_run() {
  local ids
  ids="$(comm -13 <(echo "$1") <(runs))"
  [[ -n "$ids" && "$(echo "$ids" | wc -l)" -eq 1 ]] \
    || fail "expected one new run under $work/census/.dtf/runs, found: ${ids:-none}"
  echo "$ids"
}

# check_exits RUN_DIR [TASK_DIR EXPECTED_CODE]...: every task has an
# exit.json; each says exit code 0, or EXPECTED_CODE for TASK_DIR.
check_exits() {
  local run_dir="$1"
  shift
  "$py" - "$run_dir" "$@" <<'PY' || fail "exit records of $run_dir (above)"
import json, os, sys
run_dir, rest = sys.argv[1], sys.argv[2:]
expected = dict(zip(rest[::2], (int(c) for c in rest[1::2])))
plan = json.load(open(os.path.join(run_dir, "plan.json")))
bad = []
for task in plan["tasks"]:
    name = os.path.basename(task["dir"])
    path = os.path.join(run_dir, name, "exit.json")
    if not os.path.exists(path):
        bad.append(f"{task['task']}: no {path}")
        continue
    record = json.load(open(path))
    want = expected.get(name, 0)
    if record["exit_code"] != want:
        bad.append(f"{task['task']}: exit code {record['exit_code']} "
                   f"(state {record['state']}, signal {record['signal']}), "
                   f"expected {want}")
for line in bad:
    print("FAIL:", line, file=sys.stderr)
print(f"ok: exit.json of {len(plan['tasks'])} tasks:",
      ", ".join(f"{t['task']} {expected.get(os.path.basename(t['dir']), 0)}"
                for t in plan["tasks"]))
sys.exit(1 if bad else 0)
PY
}

# --- 1. The job and its records ---------------------------------------------
t0="$(date +%s.%N)"
python="$(bash "$source_dir/tests/interop/tf_env.sh" "$build_dir")"
mkdir -p "$work/census"
job="$work/census/dtf.toml"
sed "s#\.\./\.\./\.\./shared#$shared#g" "$source_dir/examples/census/dtf.toml" > "$job"
grep -q "\"$shared/data/adult/adult.data\"" "$job" \
  || fail "$job does not name $shared/data/adult/adult.data"
if grep -q '\.\./shared' "$job"; then
  fail "$job still has relative shared paths"
fi
cd "$work/census"
"$dtf" gen-records --job "$job"
[[ -n "$(ls records/train)" && -n "$(ls records/eval)" ]] \
  || fail "gen-records wrote no shards under $work/census/records"
echo "ok: job and records ($(elapsed "$t0") s)"

# launch_fg NAME ARGS...: a foreground launch of 2 PS x 2 workers with
# --metrics-out NAME.json, its output in NAME.out / NAME.err; checks exit
# 0, every exit.json and that nothing is left. Sets run_id and run_dir.
launch_fg() {
  local name="$1" before start rc=0
  shift
  before="$(runs)"
  start="$(date +%s.%N)"
  "$dtf" launch --job "$job" --ps 2 --workers 2 --metrics-out "$name.json" \
    "$@" > "$name.out" 2> "$name.err" || rc=$?
  run_id="$(new_run "$before")"
  run_dir="$work/census/.dtf/runs/$run_id"
  if [[ $rc -ne 0 ]]; then
    show_tail "$name.out" "$name.err"
    fail "$name: dtf launch exited $rc (run $run_id)"
  fi
  echo "ok: $name run $run_id exited 0 in $(elapsed "$start") s"
  grep -q "dtf: run $run_id succeeded" "$name.err" \
    || fail "$name: no 'run $run_id succeeded' in $name.err"
  [[ -f "$name.json" ]] || fail "$name: the chief wrote no $name.json"
  check_exits "$run_dir"
  check_nothing_left "$run_dir" "$run_id"
}

# --- 2. sync ----------------------------------------------------------------
launch_fg sync
sync_run="$run_id"
at_least "$(metric sync.json accuracy)" 0.85 "sync accuracy"
[[ "$(metric sync.json eval_examples)" == 16281 ]] \
  || fail "sync: evaluated on $(metric sync.json eval_examples) rows, not 16281"
echo "ok: sync evaluated on 16281 rows ($(metric sync.json steps) steps)"

# --- 3. async ---------------------------------------------------------------
# Its own output directory, so that out/ holds the sync run's events only.
launch_fg async --set train.mode=async --set train.output_dir=out-async
at_least "$(metric async.json accuracy)" 0.85 "async accuracy"
[[ "$(metric async.json eval_examples)" == 16281 ]] \
  || fail "async: evaluated on $(metric async.json eval_examples) rows, not 16281"

# --- 4. sync, worker:1 killed with SIGKILL mid-run --------------------------
# 20 epochs: a few seconds more of training, so that the kill lands well
# before the end on a slow machine.
start="$(date +%s.%N)"
before="$(runs)"
rc=0
detached_run="$("$dtf" launch --job "$job" --ps 2 --workers 2 \
  --metrics-out kill.json --detach --set train.heartbeat_timeout=3 \
  --set train.epochs=20 --set train.output_dir=out-kill 2> kill.launch.err)" \
  || rc=$?
if [[ $rc -ne 0 ]]; then
  show_tail kill.launch.err
  fail "kill: dtf launch --detach exited $rc"
fi
kill_run="$detached_run"
[[ "$kill_run" == "$(new_run "$before")" ]] \
  || fail "kill: dtf launch --detach printed '$kill_run', not the new run's id"
kill_dir="$work/census/.dtf/runs/$kill_run"
echo "ok: detached run $kill_run started"

# poll_status RUN TIMEOUT_S CONDITION: polls `dtf status RUN --json` until
# CONDITION (a Python expression over s, the status, and w1, worker:1's row)
# holds; fails if the run ends first (unless CONDITION allows it) or on
# the timeout. Prints the last status line.
poll_status() {
  "$py" - "$dtf" "$job" "$1" "$2" "$3" <<'PY'
import json, subprocess, sys, time
dtf, job, run, timeout, condition = sys.argv[1:6]
deadline = time.time() + float(timeout)
final = ("succeeded", "failed", "stopped")
while True:
    out = subprocess.run([dtf, "status", run, "--job", job, "--json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"FAIL: dtf status {run} exited {out.returncode}: {out.stderr}")
    s = json.loads(out.stdout)
    w1 = next(t for t in s["tasks"] if t["task"] == "worker:1")
    if eval(condition):
        print(f"run {s['state']} (from {s['source']}); worker:1 "
              f"{w1['state']} step {w1['step']} exit code {w1['exit_code']}")
        sys.exit(0)
    if s["state"] in final:
        sys.exit(f"FAIL: run {run} ended ({s['state']}: {s['message']}) "
                 f"before: {condition}")
    if time.time() > deadline:
        sys.exit(f"FAIL: not within {timeout} s: {condition}; last status: "
                 f"{out.stdout}")
    time.sleep(0.1)
PY
}

# A running worker's heartbeats carry its resident memory, and so do the
# chief's own rows.
seen="$(poll_status "$kill_run" 300 \
  's["state"] == "running" and (w1["step"] or 0) > 50 and (w1["rss_bytes"] or 0) > 10e6 and all((t["rss_bytes"] or 0) > 10e6 for t in s["tasks"] if t["task"] == "worker:0")')" \
  || { show_tail "$kill_dir/supervisor.log" "$kill_dir/worker-1/stderr"; fail "kill: worker:1 made no progress"; }
echo "ok: $seen"
read -r w1_pid w1_ticks < <("$py" -c '
import json, sys
t = next(t for t in json.load(open(sys.argv[1]))["tasks"] if t["task"] == "worker:1")
print(t["pid"], t["start_ticks"])' "$kill_dir/tasks.json")
[[ "$(awk '{sub(/^.*\) /, ""); print $20}' "/proc/$w1_pid/stat" 2>/dev/null)" == "$w1_ticks" ]] \
  || fail "kill: worker:1 (pid $w1_pid) is not running any more"
kill -9 "$w1_pid" || fail "kill: kill -9 $w1_pid (worker:1) failed"
echo "ok: killed worker:1 (pid $w1_pid) with SIGKILL, $(elapsed "$start") s into the run"

seen="$(poll_status "$kill_run" 60 'w1["state"] == "failed"')" \
  || fail "kill: dtf status does not report worker:1 failed"
echo "ok: status reports $seen"
seen="$(poll_status "$kill_run" 600 's["state"] in ("succeeded", "failed", "stopped")' \
  | sed 's/^/final: /')" || fail "kill: the run did not finish"
echo "ok: $seen"
final="$("$dtf" status "$kill_run" --job "$job" --json)"
state="$("$py" -c 'import json,sys; s=json.loads(sys.argv[1]); print(s["state"], s["exit_code"])' "$final")"
if [[ "$state" != "succeeded 0" ]]; then
  show_tail "$kill_dir/supervisor.log" "$kill_dir/worker-0/stderr"
  fail "kill: run $kill_run ended '$state', not 'succeeded 0'"
fi
detached_run=""
echo "ok: run $kill_run succeeded without worker:1 in $(elapsed "$start") s"
grep -q "task worker:1 killed by SIGKILL; the run goes on without it" \
  "$kill_dir/supervisor.log" \
  || { show_tail "$kill_dir/supervisor.log"; fail "kill: supervisor.log does not report worker:1's death"; }
"$dtf" status "$kill_run" --job "$job" | grep -q 'worker:1  *failed (137)' \
  || fail "kill: dtf status does not show worker:1 failed (137)"
check_exits "$kill_dir" worker-1 137
check_nothing_left "$kill_dir" "$kill_run" 30
at_least "$(metric kill.json accuracy)" 0.84 "accuracy with worker:1 killed"
[[ "$(metric kill.json eval_examples)" == 16281 ]] \
  || fail "kill: evaluated on $(metric kill.json eval_examples) rows, not 16281"

# --- 4b. sync, ps:1 killed with SIGKILL and restarted -------------------------
cat > restart.toml <<'EOF2'
backend = "local"
ps = 2
workers = 2
host = "127.0.0.1"
max_restarts = 1
EOF2
start="$(date +%s.%N)"
before="$(runs)"
rc=0
detached_run="$("$dtf" launch --job "$job" --profile restart.toml \
  --metrics-out psk.json --detach --set train.heartbeat_timeout=3 \
  --set train.epochs=20 --set train.checkpoint_every_steps=100 \
  --set train.output_dir=out-psk 2> psk.launch.err)" || rc=$?
if [[ $rc -ne 0 ]]; then
  show_tail psk.launch.err
  fail "ps kill: dtf launch --detach exited $rc"
fi
psk_run="$detached_run"
[[ "$psk_run" == "$(new_run "$before")" ]] \
  || fail "ps kill: dtf launch --detach printed '$psk_run', not the new run's id"
psk_dir="$work/census/.dtf/runs/$psk_run"
for ((i = 0; i < 3000; i++)); do
  [[ -f out-psk/checkpoint.dtf ]] && break
  sleep 0.1
done
[[ -f out-psk/checkpoint.dtf ]] \
  || { show_tail "$psk_dir/supervisor.log"; fail "ps kill: no checkpoint in out-psk after 300 s"; }
read -r ps1_pid ps1_ticks < <("$py" -c '
import json, sys
t = next(t for t in json.load(open(sys.argv[1]))["tasks"] if t["task"] == "ps:1")
print(t["pid"], t["start_ticks"])' "$psk_dir/tasks.json")
[[ "$(awk '{sub(/^.*\) /, ""); print $20}' "/proc/$ps1_pid/stat" 2>/dev/null)" == "$ps1_ticks" ]] \
  || fail "ps kill: ps:1 (pid $ps1_pid) is not running (the run ended before the kill?)"
kill -9 "$ps1_pid" || fail "ps kill: kill -9 $ps1_pid (ps:1) failed"
echo "ok: killed ps:1 (pid $ps1_pid) with SIGKILL, $(elapsed "$start") s into the run"
seen="$(poll_status "$psk_run" 600 's["state"] in ("succeeded", "failed", "stopped")' \
  | sed 's/^/final: /')" || fail "ps kill: the run did not finish"
final="$("$dtf" status "$psk_run" --job "$job" --json)"
state="$("$py" -c '
import json, sys
s = json.loads(sys.argv[1])
ps1 = next(t for t in s["tasks"] if t["task"] == "ps:1")
print(s["state"], s["exit_code"], ps1["restarts"])' "$final")"
if [[ "$state" != "succeeded 0 1" ]]; then
  show_tail "$psk_dir/supervisor.log" "$psk_dir/ps-1/stderr" "$psk_dir/worker-0/stderr"
  fail "ps kill: run $psk_run ended '$state', not 'succeeded 0' with 1 restart of ps:1"
fi
detached_run=""
echo "ok: run $psk_run succeeded with ps:1 restarted once, in $(elapsed "$start") s"
grep -q "ps:1 killed by SIGKILL; starting it again (1 of 1 restarts)" \
  "$psk_dir/supervisor.log" \
  || { show_tail "$psk_dir/supervisor.log"; fail "ps kill: supervisor.log does not report the restart"; }
grep -q "restoring from .*out-psk/checkpoint.dtf" "$psk_dir/ps-1/stderr" \
  || { show_tail "$psk_dir/ps-1/stderr"; fail "ps kill: ps:1 did not restore the checkpoint"; }
check_exits "$psk_dir"
check_nothing_left "$psk_dir" "$psk_run" 30
at_least "$(metric psk.json accuracy)" 0.84 "accuracy with ps:1 killed and restarted"

# --- 5. TensorBoard reads the sync run's events -------------------------------
ls out/events.out.tfevents.* > /dev/null 2>&1 \
  || fail "no events.out.tfevents.* in $work/census/out (sync run $sync_run)"
TF_CPP_MIN_LOG_LEVEL=3 "$python" - "$work/census/out" <<'PY' || fail "TensorBoard on $work/census/out (above)"
import sys
from tensorboard.backend.event_processing import event_accumulator as ea
acc = ea.EventAccumulator(sys.argv[1], size_guidance={ea.SCALARS: 0})
acc.Reload()
tags = set(acc.Tags()["scalars"])
want = {"loss", "examples_per_sec", "eval/accuracy", "eval/auc", "eval/loss"}
if not want <= tags:
    sys.exit(f"FAIL: scalar tags {sorted(tags)} lack {sorted(want - tags)}")
accuracy = acc.Scalars("eval/accuracy")
last = accuracy[-1]
if last.value < 0.85:
    sys.exit(f"FAIL: last eval/accuracy {last.value:.4f} (step {last.step}) < 0.85")
print(f"ok: TensorBoard: {len(acc.Scalars('loss'))} loss points, "
      f"{len(accuracy)} evaluations, last eval/accuracy {last.value:.4f} "
      f"at step {last.step}")
PY

# --- 6. The dry-run plan is the same bytes every time -------------------------
before="$(runs)"
dry=(launch --job "$job" --ps 2 --workers 2 --metrics-out sync.json
     --set train.heartbeat_timeout=3 --dry-run --json)
"$dtf" "${dry[@]}" > plan1.json
"$dtf" "${dry[@]}" > plan2.json
cmp plan1.json plan2.json || fail "dtf launch --dry-run --json gave different bytes (plan1.json, plan2.json)"
"$py" -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["run_id"] == "<run-id>" and len(p["tasks"]) == 4, p' plan1.json \
  || fail "plan1.json is not the dry-run plan of 4 tasks"
[[ "$(runs)" == "$before" ]] || fail "dtf launch --dry-run recorded a run"
echo "ok: dry-run plans identical ($(wc -c < plan1.json) bytes)"

echo "PASS ($(elapsed "$t0") s)"
