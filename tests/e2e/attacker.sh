#!/usr/bin/env bash
# tests/e2e/attacker.sh DTF SHARED_DIR BUILD_DIR WORK_DIR
#
# An attacker's view of runs across hosts. Three hosts, each a network
# namespace on one bridge (tests/testing/netns_hosts.sh): a and b, each with
# an sshd of its own (tests/launch/ssh/sshd.sh), and x, the attacker's. The
# launcher stays outside them and reaches a and b over the bridge, on which
# tcpdump records every packet but the SSH sessions. The census job over
# SSH, the profile with no `tls` key (so the default for hosts off
# loopback: mutual TLS).
#   1. a PS run (1 PS, 2 workers, one a host). While it trains, from x, to
#      every port a dtf process listens on in a or b: a cleartext HTTP/2
#      call, TLS without a client certificate, TLS with a certificate of
#      another CA, and the client bytes of a real worker's session with the
#      PS (taken from the capture) replayed to the PS. Each gets nothing
#      (tests/e2e/attack.py); the run is still going when they end, then
#      succeeds with accuracy >= 0.85. In the capture, from the launch to
#      the end of the tries, every connection is TLS from its first byte to
#      its last (of the attacker's connections, the servers' side), and the
#      run's secret is nowhere (tests/e2e/wire_check.py).
#   2. the same for an allreduce run (2 CPU workers, one a host: the TLS
#      ring), its other-CA certificate a task certificate of run 1. The
#      ring's listeners accept during its rendezvous only, so the tries go
#      to the chief's port; the ring's connections are in the capture.
#   3. the check shown able to fail: a PS run with tls = false (the warning
#      printed), whose capture must hold a stream that is not TLS and the
#      secret.
# Needs root (namespaces), iproute2, tcpdump, openssl and OpenSSH's server
# (scripts/deps.sh --test installs them).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/e2e_lib.sh"
e2e_start "DTF SHARED_DIR BUILD_DIR WORK_DIR" "$@"
source "$source_dir/tests/testing/netns_hosts.sh"
py=/usr/bin/python3
sshd_sh="$source_dir/tests/launch/ssh/sshd.sh"
ssh_dir="$work/ssh"
remote="$work/remote"
capture_pid=""
launcher=""

[[ $(id -u) -eq 0 ]] || fail "needs root: it makes network namespaces"
for tool in ip tcpdump openssl /usr/sbin/sshd; do
  command -v "$tool" > /dev/null ||
    fail "$tool is not installed (scripts/deps.sh --test installs it)"
done

stop_capture() {
  [[ -n "$capture_pid" ]] || return 0
  kill -INT "$capture_pid" 2> /dev/null || true
  wait "$capture_pid" 2> /dev/null || true
  capture_pid=""
}

cleanup() {
  local rc=$?
  stop_capture
  [[ -z "$launcher" ]] || kill "$launcher" 2> /dev/null || true
  bash "$sshd_sh" stop "$ssh_dir" ha 2> /dev/null || true
  bash "$sshd_sh" stop "$ssh_dir" hb 2> /dev/null || true
  pkill -f -- "$remote/" 2> /dev/null || true
  hosts_teardown
  if [[ $rc -eq 0 ]]; then rm -rf "$remote" "$work"/*.pcap; fi
}
trap cleanup EXIT

# --- hosts ------------------------------------------------------------------
log() { echo "attacker: $*" >&2; }
HOSTS_NET=10.233
hosts_init "atk$$"
hosts_add a 1 10gbit
hosts_add b 2 10gbit
hosts_add x 3 10gbit
ip_a="$(host_ip a)" ip_b="$(host_ip b)" ip_x="$(host_ip x)"
on() { local h="$1"; shift; ip netns exec "$HOSTS_TAG-$h" "$@"; }
bash "$sshd_sh" keys "$ssh_dir"
port_a="$(on a bash "$sshd_sh" start "$ssh_dir" ha "$ip_a" 0)"
port_b="$(on b bash "$sshd_sh" start "$ssh_dir" hb "$ip_b" 0)"
bash "$sshd_sh" known-host "$ssh_dir" ha "$ip_a" "$port_a"
bash "$sshd_sh" known-host "$ssh_dir" hb "$ip_b" "$port_b"
echo "ok: hosts a ($ip_a, sshd :$port_a), b ($ip_b, sshd :$port_b)," \
  "the attacker x ($ip_x)"

# Another CA and a certificate it issued for x.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout "$work/other-ca.key" -out "$work/other-ca.pem" -days 2 \
  -subj "/CN=dtf run other CA" 2> /dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout "$work/other.key" -out "$work/other.csr" -subj "/CN=worker-0" \
  2> /dev/null
printf 'subjectAltName=IP:%s,DNS:worker-0\nextendedKeyUsage=serverAuth,clientAuth\n' \
  "$ip_x" > "$work/other.ext"
openssl x509 -req -in "$work/other.csr" -CA "$work/other-ca.pem" \
  -CAkey "$work/other-ca.key" -CAcreateserial -days 2 \
  -extfile "$work/other.ext" -out "$work/other.pem" 2> /dev/null

# --- the job ----------------------------------------------------------------
mkdir -p "$work/census/profiles"
job="$work/census/dtf.toml"
sed "s#\.\./\.\./\.\./shared#$shared#g" "$source_dir/examples/census/dtf.toml" > "$job"
cd "$work/census"
"$dtf" gen-records --job "$job" > /dev/null
printf '%s slots=1 port=%s\n%s slots=1 port=%s\n' \
  "$ip_a" "$port_a" "$ip_b" "$port_b" > profiles/hosts
# profile NAME [EXTRA TOML]
profile() {
  cat > "profiles/$1.toml" <<TOML
backend = "ssh"
hostfile = "hosts"
with_data = true
work_dir = "$remote/{host}"
${2:-}
$(bash "$sshd_sh" ssh-table "$ssh_dir")
TOML
}
profile ps 'ps = 1
workers = 2'
profile allreduce 'workers = 2'
profile plain 'ps = 1
workers = 2
tls = false'

# --- helpers ----------------------------------------------------------------
newest_run() { { ls .dtf/runs 2> /dev/null || true; } | sort | tail -n 1; }

# listeners: host:port of every socket a dtf process listens on in a and b.
listeners() {
  local h
  for h in a b; do
    # A dual-stack socket shows as [::ffff:ADDRESS]:PORT.
    on "$h" ss -Htlnp | awk '/"dtf"/ { print $4 }' | sed 's/^\[::ffff:\(.*\)\]/\1/'
  done | sort -u | paste -sd, -
}

# start NAME PROFILE ARGS...: a capture of the bridge (no SSH), then dtf
# launch in the background; sets run, run_dir and launcher.
start() {
  local name="$1" profile="$2" before i
  shift 2
  tcpdump -i "$HOSTS_BRIDGE" -s 0 -U -w "$work/$name.pcap" \
    "tcp and not port $port_a and not port $port_b" \
    2> "$work/$name.tcpdump.log" &
  capture_pid=$!
  for ((i = 0; i < 100; i++)); do
    grep -q 'listening on' "$work/$name.tcpdump.log" && break
    sleep 0.1
  done
  ((i < 100)) || { cat "$work/$name.tcpdump.log" >&2; fail "$name: tcpdump did not start"; }
  before="$(newest_run)"
  "$dtf" launch --job "$job" --profile "$profile" \
    --metrics-out "$work/$name.json" "$@" > "$work/$name.out" 2> "$work/$name.err" &
  launcher=$!
  # The run directory appears before its plan.json is written: wait for
  # both.
  for ((i = 0; i < 600; i++)); do
    run="$(newest_run)"
    [[ -n "$run" && "$run" != "$before" &&
      -s "$work/census/.dtf/runs/$run/plan.json" ]] && break
    kill -0 "$launcher" 2> /dev/null || { show_tail "$work/$name.err"; fail "$name: the launch ended at once"; }
    sleep 0.1
  done
  ((i < 600)) || fail "$name: no run directory with its plan.json after 60 s"
  run_dir="$work/census/.dtf/runs/$run"
}

# wait_training NAME: until a worker of the run reports a step (every task
# listens by then; the TLS ring's listeners, open for its rendezvous only,
# have closed); prints where dtf processes listen in a and b.
wait_training() {
  local i
  for ((i = 0; i < 1200; i++)); do
    grep -Eq '\] step +[0-9]+ +epoch' "$work/$1.err" && break
    kill -0 "$launcher" 2> /dev/null ||
      { show_tail "$work/$1.err"; fail "$1: the run ended before its first step"; }
    sleep 0.1
  done
  ((i < 1200)) || fail "$1: no step after 120 s"
  listeners
}

# finish NAME: the launch succeeded with accuracy >= 0.85; the capture
# stopped.
finish() {
  local rc=0
  wait "$launcher" || rc=$?
  launcher=""
  stop_capture
  ((rc == 0)) || { show_tail "$work/$1.err"; fail "$1: dtf launch exited $rc"; }
  at_least "$(metric "$work/$1.json" accuracy)" 0.85 "$1 accuracy"
}

# attack NAME TARGETS OTHER_CERT OTHER_KEY [REPLAY_TARGET]: every try from
# x gets nothing, and the run is still going afterwards.
attack() {
  local name="$1" targets="$2" extra=()
  if [[ -n "${5:-}" ]]; then
    "$py" "$here/wire_check.py" client-stream "$work/$name.pcap" \
      --port "${5##*:}" --out "$work/$name.replay"
    extra=(--replay "$work/$name.replay" --replay-target "$5")
  fi
  on x "$py" "$here/attack.py" --targets "$targets" --other-cert "$3" \
    --other-key "$4" "${extra[@]}" | tee "$work/$name.attack" ||
    fail "$name: an attack got something (above)"
  kill -0 "$launcher" 2> /dev/null ||
    fail "$name: the run ended before the attacks did (they prove nothing)"
  # The capture holds the run's start, its steps so far and the attacks:
  # enough to check, and a few hundred MB at most.
  stop_capture
  echo "ok: $name: $(tail -n 1 "$work/$name.attack"), the run goes on"
}

# --- 1. a PS run --------------------------------------------------------------
# Runs long enough (15 s and 10 s of training on an idle 2-core machine)
# that the tries end while they train.
start ps ps --set train.epochs=150
grep -q '"tls": true' "$run_dir/plan.json" || fail "ps: the plan has no TLS"
targets="$(wait_training ps)"
ps_target="$("$py" -c '
import json, sys
t = next(t for t in json.load(open(sys.argv[1]))["tasks"] if t["role"] == "ps")
print("%s:%d" % (t["host"], t["port"]))' "$run_dir/plan.json")"
# A worker's session with the PS, in the capture once it has made steps.
sleep 2
attack ps "$targets" "$work/other.pem" "$work/other.key" "$ps_target"
finish ps
"$py" "$here/wire_check.py" tls "$work/ps.pcap" --secret-file "$run_dir/secret" \
  --attacker "$ip_x" || fail "ps: cleartext on the wire"
ps_run_dir="$run_dir"

# --- 2. an allreduce run ------------------------------------------------------
start allreduce allreduce --set train.mode=allreduce --set train.device=cpu \
  --set train.epochs=100
# The chief's task port and each worker's TLS ring port.
targets="$(wait_training allreduce)"
attack allreduce "$targets" "$ps_run_dir/tls/worker-0.pem" \
  "$ps_run_dir/tls/worker-0.key"
finish allreduce
[[ $(grep -c 'joined the TLS ring collective' "$work/allreduce.err") -eq 2 ]] ||
  fail "allreduce: the workers did not both average over the TLS ring"
# The ring's own connections (its listeners accept during the rendezvous
# only) are in the capture with the rest.
"$py" "$here/wire_check.py" tls "$work/allreduce.pcap" \
  --secret-file "$run_dir/secret" --attacker "$ip_x" ||
  fail "allreduce: cleartext on the wire"

# --- 3. the check can fail: tls = false -----------------------------------------
start plain plain --set train.epochs=5
finish plain
grep -q 'tls = false: the run.s secret and every tensor cross the network in plaintext' \
  "$work/plain.err" || { show_tail "$work/plain.err"; fail "plain: no warning"; }
"$py" "$here/wire_check.py" plaintext "$work/plain.pcap" \
  --secret-file "$run_dir/secret" ||
  fail "plain: the wire check does not see a plaintext run"
echo "PASS: attacker"
