#!/usr/bin/env bash
# tests/e2e/launch_ssh_s3.sh DTF SHARED_DIR BUILD_DIR WORK_DIR
#
# An SSH run whose data and checkpoints are in a bucket and nowhere else:
# two "hosts", 127.0.0.72 and 127.0.0.73, each an OpenSSH server of its own
# (tests/launch/ssh/sshd.sh), and a SeaweedFS S3 server on loopback
# (tests/testing/s3_server.sh). The hosts' sessions have no AWS_* variables
# and no ~/.aws: the tasks reach the bucket with what the launcher passes
# them. The census job's records are gen-recorded into s3://census/records,
# its output_dir is s3://census/out, and the profile ships no data.
#   1. the dry run names the variables the tasks get, never their values
#   2. dtf launch (1 PS, 2 workers, max_restarts = 1): each host's run
#      directory holds s3-credentials (mode 0600); no task's command line
#      and no file of the run directory but that one holds the secret key;
#      once the bucket holds a checkpoint, worker:1 is killed (SIGKILL) on
#      its host, started again there, and resumes from the bucket's
#      checkpoint; then the chief is killed and the run fails
#   3. dtf launch --resume: every task restores from the bucket, the run
#      succeeds with accuracy >= 0.84, nothing is left on the hosts
#   4. the profile's [s3] credentials = "tasks": the hosts have none of
#      their own, and the launch stops before any task starts, the check on
#      each host naming it, the prefix it listed and the bucket that
#      refused it
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/e2e_lib.sh"
e2e_start "DTF SHARED_DIR BUILD_DIR WORK_DIR" "$@"
py=/usr/bin/python3
sshd_sh="$source_dir/tests/launch/ssh/sshd.sh"
ssh_dir="$work/ssh"
remote="$work/remote"
s3dir="$work/s3-server"
pids_to_kill=()

cleanup() {
  local rc=$?
  local name pid
  for name in h1 h2; do bash "$sshd_sh" stop "$ssh_dir" "$name" || true; done
  for pid in "${pids_to_kill[@]}"; do kill "$pid" 2>/dev/null || true; done
  # Whatever a failed check left: no task of these runs outlives the test.
  pkill -f -- "$remote/" 2>/dev/null || true
  bash "$source_dir/tests/testing/s3_server.sh" stop "$s3dir" || true
  # A test that passed leaves no copy of dtf on its hosts (12 MB each).
  if [[ $rc -eq 0 ]]; then rm -rf "$remote"; fi
}
trap cleanup EXIT

if [[ ! -x /usr/sbin/sshd ]]; then
  echo "SKIPPED: /usr/sbin/sshd is not installed (apt-get install openssh-server)"
  exit 0
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

t0="$(date +%s.%N)"
set -a
# shellcheck disable=SC1091
source <(bash "$source_dir/tests/testing/s3_server.sh" start "$s3dir" "$build_dir")
set +a
echo "ok: S3 server at $AWS_ENDPOINT_URL ($(elapsed "$t0") s)"
source "$source_dir/tests/testing/s3_curl.sh"
# keys PREFIX: the keys under PREFIX of bucket census, one per line.
keys() { s3_keys census "$1"; }
s3curl -X PUT "$AWS_ENDPOINT_URL/census" > /dev/null

bash "$sshd_sh" keys "$ssh_dir"
a1=127.0.0.72 a2=127.0.0.73
port1="$(bash "$sshd_sh" start "$ssh_dir" h1 "$a1" 0)"
port2="$(bash "$sshd_sh" start "$ssh_dir" h2 "$a2" 0)"
bash "$sshd_sh" known-host "$ssh_dir" h1 "$a1" "$port1"
bash "$sshd_sh" known-host "$ssh_dir" h2 "$a2" "$port2"
echo "ok: sshd on $a1:$port1 and $a2:$port2"

# --- the job: records and output in the bucket ------------------------------
mkdir -p "$work/census/profiles"
cd "$work/census"
job="$work/census/dtf.toml"
sed -e "s#\.\./\.\./\.\./shared#$shared#g" \
    -e 's#^records = .*#records = "s3://census/records"#' \
    -e 's#^output_dir = .*#output_dir = "s3://census/out"#' \
    "$source_dir/examples/census/dtf.toml" > "$job"
"$dtf" gen-records --job "$job" > /dev/null 2> gen.err \
  || { show_tail gen.err; fail "gen-records into s3://census/records"; }
[[ "$(keys records/ | grep -c 'part-.*\.tfrecord\.gz$')" == 8 ]] \
  || fail "gen-records: not 8 shards in s3://census/records: $(keys records/)"
echo "ok: 8 shards in s3://census/records ($(elapsed "$t0") s)"

# profile NAME [EXTRA TOML]: profiles/NAME.toml on both hosts, no data
# shipped.
profile() {
  cat > "profiles/$1.toml" <<TOML
backend = "ssh"
hosts = ["$a1 slots=1 port=$port1", "$a2 slots=1 port=$port2"]
ps = 1
workers = 2
threads = 1
max_restarts = 1
work_dir = "$remote/{host}"
tls = true
${2:-}
$(bash "$sshd_sh" ssh-table "$ssh_dir")
TOML
}
profile s3 "[s3]
region = \"$AWS_REGION\""
# 100 epochs of about 64 global steps: the kills below come long before
# the end.
sets=(--set train.epochs=100 --set train.checkpoint_every_steps=50
      --set train.heartbeat_timeout=3)

# --- 1. the dry run names the variables, not their values ---------------------
"$dtf" launch --profile s3 "${sets[@]}" --dry-run > dry.txt
"$dtf" launch --profile s3 "${sets[@]}" --dry-run --json > dry.json
grep -q '^s3: .*/s3-credentials (mode 0600; copied to each host.s run directory): AWS_ENDPOINT_URL, AWS_REGION, DTF_S3_PATH_STYLE, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY$' dry.txt \
  || { cat dry.txt >&2; fail "the dry run does not name the variables the tasks get"; }
grep -qF -- "--s3-credentials '$remote/$a2/runs/<run-id>/s3-credentials'" dry.txt \
  || fail "the dry run gives worker:1 no --s3-credentials on its host"
if grep -qF "$AWS_SECRET_ACCESS_KEY" dry.txt dry.json; then
  fail "the dry run shows the secret key"
fi
echo "ok: the dry run names the tasks' S3 variables and shows none of their values"

# --- 2. the run: worker:1 restarted from the bucket, then the chief killed ---
newest_run() { { ls .dtf/runs 2>/dev/null || true; } | sort | tail -n 1; }
start=$SECONDS
"$dtf" launch --profile s3 "${sets[@]}" --metrics-out "$work/metrics.json" \
  > run.out 2> run.err &
launcher=$!
pids_to_kill+=("$launcher")
# wait_until SECONDS WHAT COMMAND...: until COMMAND succeeds, while the
# launch runs.
wait_until() {
  local limit=$(($1 * 5)) what="$2" i
  shift 2
  for ((i = 0; i < limit; i++)); do
    "$@" && return 0
    kill -0 "$launcher" 2>/dev/null || { show_tail run.err; fail "the launch ended before $what"; }
    sleep 0.2
  done
  show_tail run.err
  fail "no $what after $((limit / 5)) s"
}
has_run() { [[ -n "$(newest_run)" ]]; }
wait_until 120 "a run directory" has_run
run="$(newest_run)"
has_checkpoint() { keys out/checkpoint.dtf | grep -q .; }
wait_until 300 "checkpoint in s3://census/out" has_checkpoint
for a in "$a1" "$a2"; do
  f="$remote/$a/runs/$run/s3-credentials"
  [[ "$(stat -c %a "$f")" == 600 ]] || fail "$f: mode $(stat -c %a "$f"), not 600"
  grep -qx "AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY" "$f" || fail "$f lacks the secret key"
done
leaks="$(grep -rlF "$AWS_SECRET_ACCESS_KEY" ".dtf/runs/$run" "$remote" | grep -v '/s3-credentials$' || true)"
[[ -z "$leaks" ]] || fail "the secret key is in other files of the run: $leaks"
if pgrep -a -f -- "$remote/" | grep -qF "$AWS_SECRET_ACCESS_KEY"; then
  fail "a task's command line holds the secret key"
fi
echo "ok: each host's run directory holds s3-credentials (0600); no command line or other file holds the secret"

w1_dir="$(find "$remote" -path "*/runs/$run/worker-1" -print -quit)"
[[ -n "$w1_dir" ]] || fail "no directory of worker:1 on the hosts"
read -r w1_pid _ < "$w1_dir/pid"
kill -9 "$w1_pid" || fail "kill -9 $w1_pid (worker:1)"
echo "ok: killed worker:1 (pid $w1_pid) $((SECONDS - start)) s into run $run"
w1_resumed() { grep -q "worker:1: resuming at global step [1-9]" "$w1_dir/stderr"; }
wait_until 120 "resume of worker:1 from the bucket" w1_resumed
grep -q "worker:1 killed by SIGKILL on .*; starting it again (1 of 1 restarts)" run.err \
  || { show_tail run.err; fail "the restart of worker:1 is not reported"; }
echo "ok: $(grep -o 'worker:1: resuming at global step [0-9]*' "$w1_dir/stderr" | tail -1)"

# The chief, once the bucket holds a later checkpoint: the run fails.
step_of() { grep -o 'resuming at global step [0-9]*' "$w1_dir/stderr" | tail -1 | grep -o '[0-9]*$'; }
resumed_at="$(step_of)"
later_checkpoint() {
  keys out/checkpoint- | grep -o 'checkpoint-[0-9]*' | grep -o '[0-9]*$' \
    | awk -v s="$resumed_at" '$1 > s + 50 {found = 1} END {exit !found}'
}
wait_until 300 "checkpoint past step $((resumed_at + 50))" later_checkpoint
chief_dir="$(find "$remote" -path "*/runs/$run/worker-0" -print -quit)"
read -r chief_pid _ < "$chief_dir/pid"
kill -9 "$chief_pid" || fail "kill -9 $chief_pid (the chief)"
rc=0
wait "$launcher" || rc=$?
[[ $rc -ne 0 ]] || fail "the run succeeded with its chief killed"
[[ ! -e "$work/metrics.json" ]] || fail "the chief wrote its metrics before it was killed"
echo "ok: killed the chief; the launch exited $rc"
nothing_left 20

# --- 3. dtf launch --resume from the bucket's checkpoint ----------------------
"$dtf" status "$run" --json > status.json
grep -q '"resumable": true' status.json || { cat status.json >&2; fail "run $run is not resumable"; }
rc=0
"$dtf" launch --resume "$run" > resume.out 2> resume.err || rc=$?
[[ $rc -eq 0 ]] || { show_tail resume.err; fail "dtf launch --resume $run exited $rc"; }
grep -q "ps:0: restoring from .*checkpoint.dtf" resume.err \
  || { show_tail resume.err; fail "ps:0 did not restore from the bucket's checkpoint"; }
resumed="$(grep -o 'worker:0: resuming at global step [0-9]*' resume.err | head -1)"
[[ "${resumed##* }" -gt 0 ]] || { show_tail resume.err; fail "the chief did not resume: '$resumed'"; }
grep -q "run $run succeeded" resume.err || fail "the resumed run did not succeed"
at_least "$(metric "$work/metrics.json" accuracy)" 0.84 "accuracy of the resumed run"
for key in out/model/model.toml out/checkpoint.dtf; do
  keys "$key" | grep -qx "$key" || fail "no s3://census/$key after the run"
done
if find "$remote" -name 'checkpoint*.dtf' | grep -q .; then
  fail "checkpoints on a host's disk: $(find "$remote" -name 'checkpoint*.dtf')"
fi
echo "ok: $resumed; the model is in s3://census/out and no checkpoint on any host's disk"
nothing_left 20

# --- 4. hosts without credentials of their own --------------------------------
profile tasks "[s3]
credentials = \"tasks\""
rc=0
"$dtf" launch --profile tasks "${sets[@]}" > tasks.out 2> tasks.err || rc=$?
[[ $rc -ne 0 ]] || fail "a run whose hosts have no credentials started"
for a in "$a1" "$a2"; do
  grep -Eq "preflight: .*@$a:[0-9]+: .*listing s3://census/records: .*access denied to bucket \"census\"" tasks.err \
    || { cat tasks.err >&2; fail "the preflight does not name $a and the bucket"; }
done
grep -q "failed the check on 2 hosts" tasks.err || { cat tasks.err >&2; fail "not both hosts failed"; }
if find "$remote" -path "*/runs/$(newest_run)/*/ready" | grep -q .; then
  fail "a task started although the preflight failed"
fi
echo "ok: hosts without credentials fail the preflight: $(grep -m1 -o "preflight: .*@$a1:[0-9]*: .*access denied to bucket \"census\"" tasks.err)"
nothing_left 10
echo "PASS: launch_ssh_s3 ($(elapsed "$t0") s)"
