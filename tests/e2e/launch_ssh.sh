#!/usr/bin/env bash
# tests/e2e/launch_ssh.sh DTF SHARED_DIR BUILD_DIR WORK_DIR [disk-full|recovery]
#
# The SSH backend against real OpenSSH servers started here
# (tests/launch/ssh/sshd.sh): two "hosts", 127.0.0.2 and 127.0.0.3, each an
# sshd of its own with a generated host key; a generated client key; a
# known_hosts file. The census job (examples/census) over the UCI Adult
# files, shipped with its data (with_data = true).
#   1. dtf doctor: both hosts ready
#   2. foreground launch, 2 PS x 2 workers across the two hosts: exits 0,
#      accuracy >= 0.85, every exit.json 0, nothing left running; then
#      mode = "allreduce" on CPUs, a worker a host over Gloo: accuracy >= 0.85
#   3. a second launch, detached: nothing uploaded again; status shows it
#      running; logs -f streams it prefixed by task; stop ends it and the
#      follower; nothing left
#   4. failures, each before or during launch with its one-line cause and
#      nothing left running: unknown host key (then dtf hosts trust),
#      changed host key (then --replace), wrong client key, a host that
#      refuses, a host that never answers, a port taken on a host, a work
#      dir that cannot be written, a task that exits at once, a run past
#      its --deadline
# With disk-full, only the hosts, the job and one more failure: a work dir
# on a full disk (a 1 MiB tmpfs). Mounting one needs CAP_SYS_ADMIN; without
# it the script exits 77, which CTest reports as skipped.
# With recovery, only the hosts, the job and failures survived mid-run:
#   5a. ps:0 killed with SIGKILL on its host (max_restarts = 1, a
#       checkpoint every 100 steps): started again there with --restore,
#       the run succeeds with accuracy >= 0.85, status counts 1 restart
#   5a'. worker:1 of an allreduce run killed on its host: every worker
#       restarted from the last checkpoint, the run succeeds with accuracy
#       >= 0.85, status counts 1 restart for each
#   5a''. an allreduce run of 2 of 3 worker slots grown by dtf scale:
#       every worker restarted at 3 ranks, the run succeeds
#   5b. the first host's sshd stopped mid-run (its session with it) and started
#       again 3 s later: the launcher reconnects, the run succeeds
#   5c. the second host's sshd stopped mid-run for good (reconnect_timeout = 4):
#       the run fails within the bound naming the host and the last error,
#       and nothing is left on the first host
set -euo pipefail

if [[ $# -ne 4 && ! ($# -eq 5 && ("${5:-}" == disk-full || "${5:-}" == recovery)) ]]; then
  echo "usage: $0 DTF SHARED_DIR BUILD_DIR WORK_DIR [disk-full|recovery]" >&2
  exit 2
fi
mode="${5:-all}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/e2e_lib.sh"
source_dir="$(cd "$here/../.." && pwd)"
dtf="$(realpath "$1")"
shared="$(realpath "$2")"
work="$4"
# A tmpfs an interrupted disk-full run left mounted.
umount "$work/tiny" 2>/dev/null || true
rm -rf "$work"
mkdir -p "$work"
work="$(realpath "$work")"
py=/usr/bin/python3
sshd_sh="$source_dir/tests/launch/ssh/sshd.sh"
ssh_dir="$work/ssh"
remote="$work/remote"
pids_to_kill=()
mounted=""

cleanup() {
  local rc=$?
  local name
  for name in h1 h2; do bash "$sshd_sh" stop "$ssh_dir" "$name" || true; done
  for pid in "${pids_to_kill[@]}"; do kill "$pid" 2>/dev/null || true; done
  [[ -n "$mounted" ]] && umount "$mounted" 2>/dev/null || true
  # Whatever a failed check left: no task of these runs outlives the test.
  pkill -f -- "$remote/" 2>/dev/null || true
  # A test that passed leaves no copy of dtf on its hosts (12 MB each).
  if [[ $rc -eq 0 ]]; then rm -rf "$remote"; fi
}
trap cleanup EXIT

if [[ ! -x /usr/sbin/sshd ]]; then
  echo "SKIPPED: /usr/sbin/sshd is not installed (apt-get install openssh-server)"
  [[ "$mode" == disk-full ]] && exit 77
  exit 0
fi
if [[ "$mode" == disk-full ]]; then
  mkdir -p "$work/tiny"
  if ! mount -t tmpfs -o size=1m tmpfs "$work/tiny" 2>/dev/null; then
    echo "SKIPPED: disk full (mounting a tmpfs needs CAP_SYS_ADMIN here)"
    exit 77
  fi
  mounted="$work/tiny"
fi

# nothing_left WAIT_S: within WAIT_S seconds no process runs anything under
# the hosts' work directories.
nothing_left() {
  local deadline=$((SECONDS + ${1:-10})) left
  while :; do
    left="$(pgrep -a -f -- "$remote/" || true)"
    [[ -z "$left" ]] && break
    ((SECONDS >= deadline)) && fail "processes left on the hosts: $left"
    sleep 0.2
  done
  echo "ok: no task left on any host"
}

# expect_fail NAME PATTERN ARGS...: dtf ARGS exits non-zero and its stderr
# matches PATTERN (grep -E); nothing is left running.
expect_fail() {
  local name="$1" pattern="$2" rc=0
  shift 2
  "$dtf" "$@" > "$work/$name.out" 2> "$work/$name.err" || rc=$?
  if [[ $rc -eq 0 ]]; then
    cat "$work/$name.out" "$work/$name.err" >&2
    fail "$name: dtf $* succeeded"
  fi
  if ! grep -Eq -- "$pattern" "$work/$name.err"; then
    cat "$work/$name.err" >&2
    fail "$name: stderr does not match /$pattern/"
  fi
  echo "ok: $name fails (exit $rc): $(grep -E -m1 -- "$pattern" "$work/$name.err")"
  nothing_left 15
}

# --- hosts ------------------------------------------------------------------
bash "$sshd_sh" keys "$ssh_dir"
# The recovery runs use addresses of their own: the ports a launch chooses
# are free when it looks, and runs of other tests on the same addresses
# could take them meanwhile.
a1=127.0.0.2 a2=127.0.0.3
[[ "$mode" == recovery ]] && a1=127.0.0.42 a2=127.0.0.43
port1="$(bash "$sshd_sh" start "$ssh_dir" h1 "$a1" 0)"
port2="$(bash "$sshd_sh" start "$ssh_dir" h2 "$a2" 0)"
bash "$sshd_sh" known-host "$ssh_dir" h1 "$a1" "$port1"
bash "$sshd_sh" known-host "$ssh_dir" h2 "$a2" "$port2"
echo "ok: sshd on $a1:$port1 and $a2:$port2"

# --- the job ----------------------------------------------------------------
mkdir -p "$work/census/profiles"
job="$work/census/dtf.toml"
sed "s#\.\./\.\./\.\./shared#$shared#g" "$source_dir/examples/census/dtf.toml" > "$job"
cd "$work/census"
"$dtf" gen-records --job "$job" > /dev/null
user="$(id -un)"

# profile NAME HOSTFILE_TEXT [EXTRA TOML]: profiles/NAME.toml and its
# hostfile.
profile() {
  printf '%s\n' "$2" > "profiles/$1.hosts"
  cat > "profiles/$1.toml" <<TOML
backend = "ssh"
hostfile = "$1.hosts"
ps = 2
workers = 2
with_data = true
work_dir = "$remote/{host}"
# Mutual TLS between the tasks, as for hosts off loopback.
tls = true
${3:-}
[ssh]
user = "$user"
identity_file = "$ssh_dir/id_ed25519"
known_hosts = "${KNOWN_HOSTS:-$ssh_dir/known_hosts}"
config = "none"
connect_timeout = 3
TOML
}
hosts="$a1 slots=1 port=$port1
$a2 slots=1 port=$port2"
profile ssh "$hosts"

if [[ "$mode" == disk-full ]]; then
  sed "s#work_dir = .*#work_dir = \"$work/tiny/{host}\"#" profiles/ssh.toml > profiles/full.toml
  sed -i 's#ssh.hosts#full.hosts#' profiles/full.toml
  cp profiles/ssh.hosts profiles/full.hosts
  expect_fail disk_full "127.0.0.2: work directory .* has [0-9]+ MiB free, the run needs" \
    launch --profile full
  echo "PASS: launch_ssh disk-full"
  exit 0
fi

# --- 5. recovery --------------------------------------------------------------
# newest_run: the run id made last beside the job ("" for none).
newest_run() {
  { ls .dtf/runs 2>/dev/null || true; } | sort | tail -n 1
}

# wait_for DIR PATH_PATTERN SECONDS WHAT: until a file under DIR matches
# PATH_PATTERN (find -path; for a run started in the background).
wait_for() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    [[ -n "$(find "$1" -path "$2" -print -quit 2>/dev/null)" ]] && return 0
    kill -0 "$launcher" 2>/dev/null || { tail -n 30 "$4.err" >&2; fail "$4: the launch ended before $2"; }
    sleep 0.1
  done
  fail "$4: no $2 under $1 after $3 s"
}

# launch_bg NAME ARGS...: dtf launch ARGS in the background (output in
# NAME.out/.err); sets launcher (its pid) and bg_run (the new run's id).
launcher="" bg_run=""
launch_bg() {
  local name="$1" before i
  shift
  before="$(newest_run)"
  "$dtf" launch "$@" > "$name.out" 2> "$name.err" &
  launcher=$!
  pids_to_kill+=("$launcher")
  for ((i = 0; i < 600; i++)); do
    bg_run="$(newest_run)"
    [[ -n "$bg_run" && "$bg_run" != "$before" ]] && return 0
    kill -0 "$launcher" 2>/dev/null || break
    sleep 0.1
  done
  tail -n 30 "$name.err" >&2
  fail "$name: no new run"
}

if [[ "$mode" == recovery ]]; then
  # 5a. A parameter server killed and restarted on its host. ps:0 shares
  # ${a1} with the chief, whose checkpoints (the job's output_dir, on
  # that host) it restores.
  profile restart "$hosts" "max_restarts = 1"
  start=$SECONDS
  launch_bg psk --profile restart --metrics-out "$work/psk.json" \
    --set train.epochs=60 --set train.checkpoint_every_steps=100 \
    --set train.heartbeat_timeout=3 --set train.output_dir=out-psk
  wait_for "$remote/${a1}/jobs" "*/out-psk/checkpoint.dtf" 300 psk
  ps0="$remote/${a1}/runs/$bg_run/ps-0"
  read -r ps0_pid _ < "$ps0/pid"
  kill -9 "$ps0_pid" || fail "ps kill: kill -9 $ps0_pid (ps:0) failed"
  echo "ok: killed ps:0 (pid $ps0_pid) on ${a1}, $((SECONDS - start)) s into run $bg_run"
  rc=0
  wait "$launcher" || rc=$?
  if [[ $rc -ne 0 ]]; then
    tail -n 40 psk.err "$ps0/stderr" >&2
    fail "ps kill: the launch exited $rc"
  fi
  grep -q "ps:0 killed by SIGKILL on ${a1}; starting it again (1 of 1 restarts)" psk.err \
    || { tail -n 40 psk.err >&2; fail "ps kill: the restart is not reported"; }
  grep -q "restoring from .*out-psk/checkpoint.dtf" "$ps0/stderr" \
    || { tail -n 20 "$ps0/stderr" >&2; fail "ps kill: ps:0 did not restore the checkpoint"; }
  restarts="$("$dtf" status "$bg_run" --json | "$py" -c '
import json, sys
s = json.load(sys.stdin)
print(s["state"], next(t for t in s["tasks"] if t["task"] == "ps:0")["restarts"])')"
  [[ "$restarts" == "succeeded 1" ]] || fail "ps kill: status says '$restarts', not 'succeeded 1'"
  at_least "$(metric "$work/psk.json" accuracy)" 0.85 "accuracy with ps:0 killed and restarted"
  echo "ok: ps:0 restarted once, the run succeeded in $((SECONDS - start)) s"
  nothing_left 10

  # 5a'. An allreduce rank killed on its host: the launcher restarts every
  # worker from the chief's last checkpoint (max_restarts = 1), each rank
  # at its committed input position, and the run succeeds.
  start=$SECONDS
  launch_bg ark --profile restart --metrics-out "$work/ark.json" \
    --set train.mode=allreduce --set train.device=cpu \
    --set train.epochs=20 --set train.checkpoint_every_steps=100 \
    --set train.output_dir=out-ark
  wait_for "$remote/${a1}/jobs" "*/out-ark/checkpoint.dtf" 300 ark
  w1="$remote/${a2}/runs/$bg_run/worker-1"
  read -r w1_pid _ < "$w1/pid"
  kill -9 "$w1_pid" || fail "allreduce kill: kill -9 $w1_pid (worker:1) failed"
  echo "ok: killed worker:1 (pid $w1_pid) on ${a2}, $((SECONDS - start)) s into run $bg_run"
  rc=0
  wait "$launcher" || rc=$?
  if [[ $rc -ne 0 ]]; then
    tail -n 40 ark.err "$w1/stderr" >&2
    fail "allreduce kill: the launch exited $rc"
  fi
  grep -q "worker:1 killed by SIGKILL on ${a2}; an allreduce run restarts every worker from the last checkpoint (1 of 1 restarts)" ark.err \
    || { tail -n 40 ark.err >&2; fail "allreduce kill: the restart of every worker is not reported"; }
  grep -q "worker:0: restored .*out-ark/checkpoint" "$remote/${a1}/runs/$bg_run/worker-0/stderr" \
    || { tail -n 20 "$remote/${a1}/runs/$bg_run/worker-0/stderr" >&2; fail "allreduce kill: the chief did not restore the checkpoint"; }
  restarts="$("$dtf" status "$bg_run" --json | "$py" -c '
import json, sys
s = json.load(sys.stdin)
print(s["state"], *[t["restarts"] for t in s["tasks"]])')"
  [[ "$restarts" == "succeeded 1 1" ]] \
    || fail "allreduce kill: status says '$restarts', not 'succeeded 1 1' (every worker once)"
  at_least "$(metric "$work/ark.json" accuracy)" 0.85 "accuracy with worker:1 killed and every worker restarted"
  echo "ok: every worker restarted once, the run succeeded in $((SECONDS - start)) s"
  nothing_left 10

  # 5a''. An allreduce run grown by dtf scale: 2 of 3 worker slots started
  # (max_workers = 3), the third added mid-run: every worker starts again
  # from the last checkpoint at 3 ranks, the new one on its host too, and
  # the run succeeds.
  profile grow "$a1 slots=1 port=$port1
$a2 slots=2 port=$port2" "max_workers = 3"
  start=$SECONDS
  launch_bg grow --profile grow --metrics-out "$work/grow.json" \
    --set train.mode=allreduce --set train.device=cpu \
    --set train.epochs=20 --set train.checkpoint_every_steps=100 \
    --set train.output_dir=out-grow
  wait_for "$remote/${a1}/jobs" "*/out-grow/checkpoint.dtf" 300 grow
  "$dtf" scale "$bg_run" --workers 3 --wait 120 > grow-scale.out 2>&1 \
    || { cat grow-scale.out >&2; tail -n 40 grow.err >&2; fail "grow: dtf scale failed"; }
  echo "ok: dtf scale $bg_run --workers 3, $((SECONDS - start)) s into the run"
  rc=0
  wait "$launcher" || rc=$?
  [[ $rc -eq 0 ]] || { tail -n 40 grow.err >&2; fail "grow: the launch exited $rc"; }
  grep -q "dtf scale: every worker starts again from the last checkpoint with worker:2, at 3 ranks (workers 0,1,2)" grow.err \
    || { tail -n 40 grow.err >&2; fail "grow: the restart at 3 ranks is not reported"; }
  w2_err="$(find "$remote" -path "*/runs/$bg_run/worker-2/stderr" -print -quit)"
  grep -q "joined the Gloo collective as rank 2 of 3" "$w2_err" \
    || { tail -n 20 "$w2_err" >&2; fail "grow: worker:2 did not join as rank 2 of 3"; }
  # The workers the restart stopped are stopped, even one that ended with
  # the chief before the launcher's signal reached its host.
  if grep -E "worker:[01] on [0-9.]+ failed" grow.err; then
    fail "grow: a worker the restart stopped is recorded as failed"
  fi
  at_least "$(metric "$work/grow.json" accuracy)" 0.85 "accuracy with worker:2 added to an allreduce run"
  echo "ok: worker:2 joined at 3 ranks, the run succeeded in $((SECONDS - start)) s"
  nothing_left 10

  # 5b. A dropped session: the server goes away with the session it serves,
  # and comes back 3 s later on the same port.
  start=$SECONDS
  launch_bg drop --profile ssh --metrics-out "$work/drop.json" --set train.epochs=60
  wait_for "$remote/${a1}/runs/$bg_run" "*/worker-0/ready" 300 drop
  sleep 2
  bash "$sshd_sh" stop "$ssh_dir" h1
  echo "ok: stopped ${a1}'s sshd $((SECONDS - start)) s into run $bg_run"
  sleep 3
  kill -0 "$launcher" 2>/dev/null || { tail -n 30 drop.err >&2; fail "drop: the launch ended while the host was away"; }
  bash "$sshd_sh" start "$ssh_dir" h1 ${a1} "$port1" > /dev/null
  rc=0
  wait "$launcher" || rc=$?
  if [[ $rc -ne 0 ]]; then
    tail -n 40 drop.err >&2
    fail "drop: the launch exited $rc"
  fi
  grep -q "lost the connection to ${a1} .*reconnecting for up to 30 s" drop.err \
    || { tail -n 40 drop.err >&2; fail "drop: the lost connection is not reported"; }
  grep -q "reconnected to ${a1} after [0-9]* attempts*; watching its tasks again" drop.err \
    || { tail -n 40 drop.err >&2; fail "drop: the reconnect is not reported"; }
  at_least "$(metric "$work/drop.json" accuracy)" 0.85 "accuracy with a dropped session"
  echo "ok: reconnected to ${a1}, the run succeeded in $((SECONDS - start)) s"
  nothing_left 10

  # 5c. A host that stays down: the run fails within the bound, naming it.
  profile down "$hosts"
  sed -i 's/^connect_timeout = 3$/connect_timeout = 3\nreconnect_timeout = 4/' profiles/down.toml
  launch_bg down --profile down --set train.epochs=200
  wait_for "$remote/${a2}/runs/$bg_run" "*/worker-1/ready" 300 down
  sleep 1
  bash "$sshd_sh" stop "$ssh_dir" h2
  start=$SECONDS
  rc=0
  wait "$launcher" || rc=$?
  took=$((SECONDS - start))
  [[ $rc -ne 0 ]] || fail "down: the launch succeeded with ${a2} gone"
  pattern="host ${a2} is unreachable: the SSH connection dropped and [0-9]+ reconnects? within 4 s \(ssh.reconnect_timeout\) failed; the last: .*${a2}"
  grep -Eq -- "$pattern" down.err || { tail -n 30 down.err >&2; fail "down: stderr does not match /$pattern/"; }
  echo "ok: down fails (exit $rc) in $took s: $(grep -E -m1 -- "$pattern" down.err)"
  ((took <= 20)) || fail "down: took $took s (reconnect_timeout 4 s, connect_timeout 3 s)"
  # Nothing of the run is left on the host still reached; what runs on the
  # lost one is this test's to end.
  deadline=$((SECONDS + 15))
  while left="$(pgrep -a -f -- "$remote/${a1}/" || true)"; [[ -n "$left" ]]; do
    ((SECONDS >= deadline)) && fail "down: processes left on ${a1}: $left"
    sleep 0.2
  done
  echo "ok: nothing left on ${a1}"
  pkill -f -- "$remote/${a2}/" 2>/dev/null || true
  echo "PASS: launch_ssh recovery"
  exit 0
fi

# --- 1. doctor --------------------------------------------------------------
"$dtf" doctor --profile ssh > doctor.out 2> doctor.err \
  || { cat doctor.out doctor.err >&2; fail "doctor failed"; }
grep -q "all 2 hosts ready" doctor.out || { cat doctor.out; fail "doctor: not ready"; }
echo "ok: doctor"; cat doctor.out

# --- 2. foreground launch ---------------------------------------------------
start=$SECONDS
rc=0
"$dtf" launch --profile ssh --metrics-out "$work/fg.json" > fg.out 2> fg.err || rc=$?
if [[ $rc -ne 0 ]]; then
  tail -n 40 fg.out fg.err >&2
  fail "foreground launch exited $rc"
fi
run_id="$(ls .dtf/runs | sort | tail -n 1)"
echo "ok: run $run_id exited 0 in $((SECONDS - start)) s"
grep -q "127.0.0.2: shipped the runtime and the job" fg.err || fail "no shipping note for 127.0.0.2"
grep -q '^\[127.0.0.2 worker:0\]' fg.out fg.err || fail "no [127.0.0.2 worker:0] output streamed"
at_least "$(metric "$work/fg.json" accuracy)" 0.85 "ssh accuracy"
for t in ps-0 ps-1 worker-0 worker-1; do
  code="$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["exit_code"])' ".dtf/runs/$run_id/$t/exit.json")"
  [[ "$code" == 0 ]] || fail "$t exit code $code"
done
grep -q '"host": "127.0.0.3"' ".dtf/runs/$run_id/plan.json" || fail "no task on 127.0.0.3"
grep -q '"tls": true' ".dtf/runs/$run_id/plan.json" || fail "plan.json: no tls"
grep -q -- '--tls-dir' ".dtf/runs/$run_id/plan.json" || fail "plan.json: no --tls-dir"
# Each host has the run's CA certificate and its own tasks' files only,
# private; the CA's key never leaves the launcher.
tls3="$remote/127.0.0.3/runs/$run_id/tls"
[[ -f "$tls3/ca.pem" && ! -e "$tls3/ca.key" ]] || fail "127.0.0.3: tls/ holds $(ls "$tls3")"
[[ "$(stat -c %a "$tls3")" == 700 ]] || fail "127.0.0.3: tls/ is not 0700"
for f in "$tls3"/*.key; do
  [[ "$(stat -c %a "$f")" == 600 ]] || fail "$f is not 0600"
done
echo "ok: mutual TLS, each host with its own certificates"
echo "ok: every task exited 0"
nothing_left 10

# --- 2b. allreduce on CPUs across the hosts -----------------------------------
# No parameter servers: worker:0 on 127.0.0.2 and worker:1 on 127.0.0.3
# average their gradients over Gloo's TCP ring, meeting through the chief.
rc=0
"$dtf" launch --profile ssh --set train.mode=allreduce --set train.device=cpu \
  --metrics-out "$work/allreduce.json" > ar.out 2> ar.err || rc=$?
if [[ $rc -ne 0 ]]; then
  tail -n 40 ar.out ar.err >&2
  fail "allreduce launch exited $rc"
fi
ar_run="$(ls .dtf/runs | sort | tail -n 1)"
[[ ! -e ".dtf/runs/$ar_run/ps-0" ]] || fail "allreduce: the plan has a parameter server"
grep -q '^\[127.0.0.3 worker:1\] worker:1: joined the Gloo collective as rank 1 of 2' ar.out ar.err \
  || { tail -n 40 ar.out ar.err >&2; fail "allreduce: worker:1 on 127.0.0.3 did not join Gloo"; }
at_least "$(metric "$work/allreduce.json" accuracy)" 0.85 "ssh allreduce accuracy"
nothing_left 10

# --- 3. detached, cached, status, logs -f, stop -----------------------------
id="$("$dtf" launch --profile ssh --detach --set train.epochs=50 2> det.err)" \
  || { cat det.err >&2; fail "detached launch failed"; }
grep -q "runtime and job already there" ".dtf/runs/$id/supervisor.log" \
  || { cat ".dtf/runs/$id/supervisor.log" >&2; fail "second launch shipped again"; }
[[ "$(grep -c "already there" ".dtf/runs/$id/supervisor.log")" == 2 ]] \
  || fail "a host was shipped to again"
echo "ok: second launch uploaded nothing"
for i in $(seq 1 300); do
  "$dtf" status "$id" --json > status.json 2>/dev/null || true
  if "$py" -c 'import json,sys; s=json.load(open("status.json")); sys.exit(0 if s["chief"]["reachable"] and s["chief"]["global_step"] > 0 else 1)' 2>/dev/null; then
    break
  fi
  sleep 0.2
done
"$py" -c 'import json,sys; s=json.load(open("status.json")); sys.exit(0 if s["chief"]["reachable"] else 1)' \
  || { cat status.json; fail "status: chief not reachable"; }
"$dtf" status "$id" | head -n 3
timeout 120 "$dtf" logs "$id" -f > follow.out 2> follow.err &
follower=$!
pids_to_kill+=("$follower")
# Stopped once it streams the run's lines.
for ((i = 0; i < 600; i++)); do
  grep -Eq '^\[127\.0\.0\.[23] (ps|worker):[0-9]\] ' follow.out follow.err && break
  kill -0 "$follower" 2>/dev/null || break
  sleep 0.1
done
"$dtf" stop "$id" --grace 5 > stop.out || fail "dtf stop failed"
cat stop.out
grep -q "stopped" stop.out || fail "stop: $(cat stop.out)"
wait "$follower" || fail "logs -f exited $?"
grep -Eq '^\[127\.0\.0\.[23] (ps|worker):[0-9]\] ' follow.out follow.err \
  || fail "logs -f: no lines prefixed with host and task"
state="$("$dtf" status "$id" --json | "$py" -c 'import json,sys; print(json.load(sys.stdin)["state"])')"
[[ "$state" == stopped ]] || fail "status after stop: $state"
echo "ok: status, logs -f and stop"
nothing_left 10

# --- 4. failures ------------------------------------------------------------
# Unknown host key: 127.0.0.3 is not in this known_hosts.
grep -v "127.0.0.3" "$ssh_dir/known_hosts" > "$work/partial_known_hosts"
KNOWN_HOSTS="$work/partial_known_hosts" profile unknown "$hosts"
fp="$(ssh-keygen -lf "$ssh_dir/h2/ssh_host_ed25519_key.pub" | awk '{print $2}')"
fp_re="$(printf '%s' "$fp" | sed 's/[+/.]/\\&/g')"
expect_fail unknown_key "127.0.0.3: .*$fp_re.*dtf hosts trust 127.0.0.3" \
  launch --profile unknown
"$dtf" hosts trust 127.0.0.3 --profile unknown > trust.out || fail "hosts trust failed"
grep -qF "$fp" trust.out || fail "hosts trust did not show $fp"
"$dtf" doctor --profile unknown > /dev/null || fail "doctor after trust"
echo "ok: dtf hosts trust"

# Changed host key: h2 restarted with a new key.
bash "$sshd_sh" stop "$ssh_dir" h2
bash "$sshd_sh" new-host-key "$ssh_dir" h2
bash "$sshd_sh" start "$ssh_dir" h2 127.0.0.3 "$port2" > /dev/null
expect_fail changed_key "127.0.0.3: .*CHANGED" launch --profile ssh
expect_fail changed_no_replace "CHANGED.*--replace" hosts trust 127.0.0.3 --profile ssh
"$dtf" hosts trust 127.0.0.3 --profile ssh --replace > /dev/null || fail "trust --replace"
echo "ok: a changed key is replaced only with --replace"

# Wrong client key.
ssh-keygen -q -t ed25519 -N '' -f "$work/other_key"
sed "s#$ssh_dir/id_ed25519#$work/other_key#" profiles/ssh.toml > profiles/wrongkey.toml
cp profiles/ssh.hosts profiles/wrongkey.hosts
sed -i 's#ssh.hosts#wrongkey.hosts#' profiles/wrongkey.toml
expect_fail wrong_key "127.0.0.2: .*(no key was accepted|denied)" launch --profile wrongkey

# A host that refuses, and one that never answers.
hold_port 127.0.0.3 bind
dead="$held_port"
profile refused "127.0.0.2 slots=1 port=$port1
127.0.0.3 slots=1 port=$dead"
expect_fail refused "127.0.0.3: .*(refused|unreachable|sshd listens)" launch --profile refused
hold_port 127.0.0.3 listen
silent="$held_port"
profile silent "127.0.0.2 slots=1 port=$port1
127.0.0.3 slots=1 port=$silent"
start=$SECONDS
expect_fail silent "127.0.0.3: .*(timed out|timeout|no answer|within)" launch --profile silent
((SECONDS - start < 60)) || fail "silent host took $((SECONDS - start)) s"

# A port taken on a host: fixed ports from base_port, and ps:1 (task 1, the
# first task on 127.0.0.3) on a port something listens on there.
hold_port 127.0.0.3 listen
taken="$held_port"
profile taken "$hosts" "base_port = $((taken - 1))"
expect_fail port_taken "127.0.0.3: port $taken \(ps:1\) is in use" launch --profile taken

# A work dir that cannot be written (under a regular file).
touch "$work/a_file"
sed "s#work_dir = .*#work_dir = \"$work/a_file/{host}\"#" profiles/ssh.toml > profiles/nowrite.toml
sed -i 's#ssh.hosts#nowrite.hosts#' profiles/nowrite.toml
cp profiles/ssh.hosts profiles/nowrite.hosts
expect_fail not_writable "127.0.0.2: work directory .* cannot be created or written" \
  launch --profile nowrite

# Data not shipped and not on the hosts: the preflight names the path
# where each host's tasks would read it, before any task starts.
sed 's#^with_data = true#with_data = false#' profiles/ssh.toml > profiles/nodata.toml
sed -i 's#ssh.hosts#nodata.hosts#' profiles/nodata.toml
cp profiles/ssh.hosts profiles/nodata.hosts
expect_fail no_data "127.0.0.[23]: no TFRecord shards \(part-\*\.tfrecord\*\) in .*/jobs/[0-9a-f]{16}/.*; the profile does not ship the data: set with_data = true" \
  launch --profile nodata
if grep -q "started on" "$work/no_data.err"; then
  fail "no_data: a task started"
fi

# An override the job file cannot take stops the launch before any host is
# contacted.
expect_fail bad_set "--set train.batch_size=0: .*train.batch_size" \
  launch --profile ssh --set train.batch_size=0

# A task that exits at once: the workers find no shards where the override
# points.
expect_fail exits_at_once "(task ps:[01] on 127.0.0.[23] failed.*stopped the other tasks|the chief \(worker:0 on 127.0.0.2\) exited with status [12])" \
  launch --profile ssh --set data.records=/nonexistent/records

# A run past its --deadline: every task on both hosts is stopped (the chief
# writes its checkpoint as it stops), and the launch says why.
start=$SECONDS
expect_fail deadline "the run's deadline \(--deadline 8 s\) passed; stopped every task" \
  launch --profile ssh --deadline 8 --set train.epochs=1000
((SECONDS - start < 60)) || fail "the deadline took $((SECONDS - start)) s"

echo "PASS: launch_ssh"
