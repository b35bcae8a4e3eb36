#!/usr/bin/env bash
# tests/e2e/launch_allreduce.sh DTF SHARED_DIR WORK_DIR
#
# mode = "allreduce" on CPU workers (Gloo) through the binary: `dtf launch`
# runs 2 workers as processes on loopback, on the census wide & deep job.
#   1. the job (mode = "allreduce", device = "cpu"); dtf gen-records --job
#   2. --dry-run: no parameter servers, 2 workers
#   3. in the foreground: exits 0, accuracy >= 0.85 on the 16,281 rows of
#      adult.test, both workers joined the Gloo collective, nothing is left
#   3b. the workers on a network address of this machine (TLS on): both
#      join the TLS ring instead of Gloo, and the run succeeds with the
#      foreground run's accuracy (the same data and steps)
#   4. max_restarts = 0: worker:1 killed with SIGKILL mid-run; the run fails
#      within train.collective_timeout, the launcher's message names
#      worker:1, and no process of the run is left
#   4b. worker:1 stopped with SIGSTOP (hung): the run fails naming it, the
#      stopped process is killed, nothing is left
#   5. max_restarts = 1: worker:1 killed once a checkpoint exists; every
#      worker restarts from the last checkpoint, the run succeeds with
#      accuracy >= 0.84 and one restart of each worker; nothing is left
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/e2e_lib.sh"
e2e_start "DTF SHARED_DIR WORK_DIR" "$@"
py=/usr/bin/python3
detached_run=""  # a detached run in flight, stopped if this script fails

cleanup() {
  if [[ -n "$detached_run" ]]; then
    echo "stopping run $detached_run" >&2
    "$dtf" stop --job "$job" "$detached_run" >&2 || true
  fi
}
trap cleanup EXIT

# task_pid RUN_DIR TASK: the recorded pid of TASK.
task_pid() {
  "$py" -c '
import json, sys
print(next(t["pid"] for t in json.load(open(sys.argv[1]))["tasks"]
           if t["task"] == sys.argv[2]))' "$1/tasks.json" "$2"
}

# wait_end RUN TIMEOUT_S: waits until `dtf status RUN` says the run ended;
# prints its state and exit code.
wait_end() {
  "$py" - "$dtf" "$job" "$1" "$2" <<'PY'
import json, subprocess, sys, time
dtf, job, run, timeout = sys.argv[1:5]
deadline = time.time() + float(timeout)
while True:
    out = subprocess.run([dtf, "status", run, "--job", job, "--json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"FAIL: dtf status {run} exited {out.returncode}: {out.stderr}")
    s = json.loads(out.stdout)
    if s["state"] in ("succeeded", "failed", "stopped"):
        print(s["state"], s["exit_code"],
              " ".join(str(t["restarts"]) for t in s["tasks"]))
        sys.exit(0)
    if time.time() > deadline:
        sys.exit(f"FAIL: run {run} still {s['state']} after {timeout} s")
    time.sleep(0.1)
PY
}

# launch_detached NAME ARGS...: a detached launch; sets run_id, run_dir.
launch_detached() {
  local name="$1" rc=0
  shift
  run_id="$("$dtf" launch --job "$job" --detach "$@" 2> "$name.launch.err")" \
    || rc=$?
  if [[ $rc -ne 0 ]]; then
    show_tail "$name.launch.err"
    fail "$name: dtf launch --detach exited $rc"
  fi
  detached_run="$run_id"
  run_dir="$work/census/.dtf/runs/$run_id"
}

# --- 1. The job and its records ---------------------------------------------
t0="$(date +%s.%N)"
mkdir -p "$work/census"
job="$work/census/dtf.toml"
sed -e "s#\.\./\.\./\.\./shared#$shared#g" \
    -e 's#^\[train\]$#[train]\nmode = "allreduce"\ndevice = "cpu"\ncollective_timeout = 10#' \
    "$source_dir/examples/census/dtf.toml" > "$job"
grep -q '^mode = "allreduce"$' "$job" || fail "$job has no mode = \"allreduce\""
cd "$work/census"
"$dtf" gen-records --job "$job" > /dev/null
echo "ok: job and records ($(elapsed "$t0") s)"

# --- 2. The plan --------------------------------------------------------------
"$dtf" launch --job "$job" --workers 2 --dry-run --json > plan.json
"$py" -c '
import json, sys
p = json.load(open(sys.argv[1]))
roles = [t["task"] for t in p["tasks"]]
assert roles == ["worker:0", "worker:1"], roles
' plan.json || fail "the dry-run plan is not 2 workers without parameter servers (plan.json)"
echo "ok: dry-run plan of 2 workers, no parameter servers"

# --- 3. In the foreground -----------------------------------------------------
start="$(date +%s.%N)"
rc=0
# Every rank waits in its collective while the chief evaluates; on a
# loaded machine that can outlast the job's 10 s, which steps 4 and 4b
# keep short. This run only has to succeed.
"$dtf" launch --job "$job" --workers 2 --metrics-out "$work/census/fg.json" \
  --set train.collective_timeout=60 > fg.out 2> fg.err || rc=$?
[[ $rc -eq 0 ]] || { show_tail fg.out fg.err; fail "foreground: dtf launch exited $rc"; }
echo "ok: foreground run exited 0 in $(elapsed "$start") s"
at_least "$(metric fg.json accuracy)" 0.85 "allreduce accuracy on 2 CPU workers"
[[ "$(metric fg.json eval_examples)" == 16281 ]] \
  || fail "foreground: evaluated on $(metric fg.json eval_examples) rows, not 16281"
fg_run="$(ls .dtf/runs | tail -n 1)"
for w in 0 1; do
  grep -q "joined the Gloo collective as rank $w of 2" \
    ".dtf/runs/$fg_run/worker-$w/stderr" \
    || { show_tail ".dtf/runs/$fg_run/worker-$w/stderr"; fail "worker:$w did not join the Gloo collective"; }
done
check_nothing_left ".dtf/runs/$fg_run" "$fg_run" 10

# --- 3b. Off loopback: the TLS ring ------------------------------------------
addr="$(ip -4 -o addr show scope global | awk '{print $4}' | cut -d/ -f1 | head -n 1)"
[[ -n "$addr" ]] || fail "3b: this machine has no IPv4 address other than loopback"
cat > net.toml <<EOF2
backend = "local"
ps = 1
workers = 2
host = "$addr"
EOF2
start="$(date +%s.%N)"
rc=0
"$dtf" launch --job "$job" --profile "$work/census/net.toml" \
  --metrics-out "$work/census/net.json" --set train.epochs=2 \
  --set train.collective_timeout=60 --set train.output_dir=out-net \
  > net.out 2> net.err || rc=$?
[[ $rc -eq 0 ]] || { show_tail net.out net.err; fail "3b: dtf launch on $addr exited $rc"; }
net_run="$(ls .dtf/runs | tail -n 1)"
for w in 0 1; do
  grep -q "joined the TLS ring collective as rank $w of 2" \
    ".dtf/runs/$net_run/worker-$w/stderr" \
    || { show_tail ".dtf/runs/$net_run/worker-$w/stderr"; fail "3b: worker:$w did not join the TLS ring"; }
done
at_least "$(metric net.json accuracy)" 0.84 "allreduce accuracy over the TLS ring"
check_nothing_left ".dtf/runs/$net_run" "$net_run" 10
echo "ok: 2 workers on $addr averaged over the TLS ring in $(elapsed "$start") s"

# --- 4. worker:1 killed, max_restarts = 0 -------------------------------------
launch_detached kill --workers 2 --set train.epochs=200 \
  --set train.output_dir=out-kill
for ((i = 0; i < 600; i++)); do
  grep -q "^step " "$run_dir/worker-1/stderr" 2>/dev/null && break
  sleep 0.1
done
grep -q "^step " "$run_dir/worker-1/stderr" \
  || { show_tail "$run_dir/supervisor.log" "$run_dir/worker-1/stderr"; fail "kill: worker:1 logged no step in 60 s"; }
w1="$(task_pid "$run_dir" worker:1)"
kill -9 "$w1" || fail "kill: kill -9 $w1 (worker:1) failed"
killed_at="$(date +%s.%N)"
echo "ok: killed worker:1 (pid $w1) with SIGKILL"
end="$(wait_end "$run_id" 60)" || fail "kill: the run did not end within 60 s"
took="$(elapsed "$killed_at")"
detached_run=""
[[ "$end" == failed* ]] \
  || { show_tail "$run_dir/supervisor.log"; fail "kill: run $run_id ended '$end', not failed"; }
# collective_timeout (10 s) and the launcher's grace (10 s) at most.
"$py" -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 20 else 1)' "$took" \
  || fail "kill: the run ended $took s after the kill, not within 20 s"
grep -q "task worker:1 killed by SIGKILL before the run ended; an allreduce run cannot go on" \
  "$run_dir/supervisor.log" \
  || { show_tail "$run_dir/supervisor.log"; fail "kill: supervisor.log does not name worker:1"; }
echo "ok: run $run_id failed $took s after the kill, naming worker:1"
check_nothing_left "$run_dir" "$run_id" 30

# --- 4b. worker:1 hung (SIGSTOP) ------------------------------------------------
# Its heartbeats stop with it: the chief fails the run within
# train.heartbeat_timeout (its collective within collective_timeout), and
# the launcher kills the stopped process after --grace.
launch_detached hang --workers 2 --grace 2 --set train.epochs=200 \
  --set train.heartbeat_timeout=3 --set train.output_dir=out-hang
for ((i = 0; i < 600; i++)); do
  grep -q "^step " "$run_dir/worker-1/stderr" 2>/dev/null && break
  sleep 0.1
done
w1="$(task_pid "$run_dir" worker:1)"
kill -STOP "$w1" || fail "hang: kill -STOP $w1 (worker:1) failed"
stopped_at="$(date +%s.%N)"
echo "ok: stopped worker:1 (pid $w1) with SIGSTOP"
end="$(wait_end "$run_id" 60)" || fail "hang: the run did not end within 60 s"
took="$(elapsed "$stopped_at")"
detached_run=""
[[ "$end" == failed* ]] \
  || { show_tail "$run_dir/supervisor.log"; fail "hang: run $run_id ended '$end', not failed"; }
grep -q "worker:1 has sent no heartbeat\|on rank 0 of 2" "$run_dir/worker-0/stderr" \
  || { show_tail "$run_dir/worker-0/stderr"; fail "hang: the chief's error names neither worker:1 nor its collective"; }
echo "ok: run $run_id failed $took s after worker:1 hung"
check_nothing_left "$run_dir" "$run_id" 30

# --- 5. worker:1 killed, max_restarts = 1: every worker restarts ------------
cat > restart.toml <<'EOF2'
backend = "local"
workers = 2
host = "127.0.0.1"
max_restarts = 1
EOF2
launch_detached restart --profile restart.toml --set train.epochs=30 \
  --set train.checkpoint_every_steps=200 --set train.output_dir=out-rs \
  --metrics-out "$work/census/rs.json"
for ((i = 0; i < 600; i++)); do
  [[ -f out-rs/checkpoint.dtf ]] && break
  sleep 0.1
done
[[ -f out-rs/checkpoint.dtf ]] \
  || { show_tail "$run_dir/supervisor.log"; fail "restart: no checkpoint in out-rs after 60 s"; }
w1="$(task_pid "$run_dir" worker:1)"
kill -9 "$w1" || fail "restart: kill -9 $w1 (worker:1) failed (the run ended first?)"
echo "ok: killed worker:1 (pid $w1) with SIGKILL once a checkpoint existed"
end="$(wait_end "$run_id" 300)" || fail "restart: the run did not end"
detached_run=""
if [[ "$end" != "succeeded 0 1 1" ]]; then
  show_tail "$run_dir/supervisor.log" "$run_dir/worker-0/stderr" "$run_dir/worker-1/stderr"
  fail "restart: run $run_id ended '$end', not 'succeeded 0' with 1 restart of each worker"
fi
grep -q "task worker:1 killed by SIGKILL; an allreduce run restarts every worker from the last checkpoint (1 of 1 restarts)" \
  "$run_dir/supervisor.log" \
  || { show_tail "$run_dir/supervisor.log"; fail "restart: supervisor.log does not report the restart of every worker"; }
for w in 0 1; do
  grep -q "worker:$w: resuming at global step" "$run_dir/worker-$w/stderr" \
    || { show_tail "$run_dir/worker-$w/stderr"; fail "restart: worker:$w did not resume from the checkpoint"; }
done
at_least "$(metric rs.json accuracy)" 0.84 "accuracy with worker:1 killed and every worker restarted"
check_nothing_left "$run_dir" "$run_id" 30

echo "PASS ($(elapsed "$t0") s)"
