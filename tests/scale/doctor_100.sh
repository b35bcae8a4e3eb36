#!/usr/bin/env bash
# tests/scale/doctor_100.sh DTF WORK_DIR [HOSTS]
#
# `dtf doctor` against HOSTS (default 100) sshd instances on loopback
# addresses 127.0.2.1, 127.0.2.2, ... (tests/launch/ssh/sshd.sh, each with a
# host key of its own, all in one known_hosts): every host is reported
# ready, in one run, and the seconds it took are printed
# ("doctor: N hosts in S s"), which bench/scale reads. Every sshd is stopped
# at the end. Needs /usr/sbin/sshd (scripts/deps.sh --test installs it).
set -euo pipefail

if [[ $# -ne 2 && $# -ne 3 ]]; then
  echo "usage: $0 DTF WORK_DIR [HOSTS]" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sshd_sh="$here/../launch/ssh/sshd.sh"
dtf="$(realpath "$1")"
work="$2"
hosts="${3:-100}"
rm -rf "$work"
mkdir -p "$work"
work="$(realpath "$work")"
ssh_dir="$work/ssh"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

[[ -x /usr/sbin/sshd ]] ||
  fail "/usr/sbin/sshd is not installed (apt-get install openssh-server)"

started=()
cleanup() {
  local name
  for name in "${started[@]}"; do
    bash "$sshd_sh" stop "$ssh_dir" "$name" > /dev/null 2>&1 || true
  done
}
trap cleanup EXIT

bash "$sshd_sh" keys "$ssh_dir"
: > "$work/cluster.hosts"
t0=$SECONDS
for ((i = 1; i <= hosts; i++)); do
  addr="127.0.2.$i"
  port="$(bash "$sshd_sh" start "$ssh_dir" "h$i" "$addr" 0)"
  started+=("h$i")
  bash "$sshd_sh" known-host "$ssh_dir" "h$i" "$addr" "$port"
  echo "$addr slots=1 port=$port" >> "$work/cluster.hosts"
done
echo "ok: $hosts sshd instances on 127.0.2.1..127.0.2.$hosts in $((SECONDS - t0)) s"

mkdir -p "$work/job/profiles"
cat > "$work/job/profiles/many.toml" <<TOML
backend = "ssh"
hostfile = "../../cluster.hosts"
ps = 1
workers = $((hosts - 1))
work_dir = "$work/remote/{host}"

[ssh]
user = "$(id -un)"
identity_file = "$ssh_dir/id_ed25519"
known_hosts = "$ssh_dir/known_hosts"
config = "none"
connect_timeout = 10
TOML
# The smallest job the plan needs; its records on a path every "host"
# sees (they all are this machine), as on shared storage.
mkdir -p "$work/records/train" "$work/records/eval"
: > "$work/records/part-00000.tfrecord"
: > "$work/records/train/part-00000.tfrecord"
: > "$work/records/eval/part-00000.tfrecord"
cat > "$work/job/dtf.toml" <<TOML
[data]
records = "$work/records"

[schema]
label = "y"
columns = ["x:float", "y:int"]

[[features.numeric]]
name = "x"

[model]
type = "linear"
loss = "binary_crossentropy"

[train]
steps = 1
TOML

cd "$work/job"
t0=$(date +%s.%N)
rc=0
"$dtf" doctor --profile many --timeout 120 > doctor.out 2> doctor.err || rc=$?
t1=$(date +%s.%N)
seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
if ((rc != 0)) || ! grep -q "all $hosts hosts ready" doctor.out; then
  head -n 20 doctor.out doctor.err >&2
  fail "dtf doctor (exit $rc) did not report all $hosts hosts ready"
fi
rows=$(grep -cE "^[^ ]*@?127\.0\.2\.[0-9]+:[0-9]+ +ok .* ok$" doctor.out || true)
((rows == hosts)) || { cat doctor.out >&2; fail "$rows host rows say ok, not $hosts"; }
echo "ok: dtf doctor reports all $hosts hosts ready, one row each"
echo "doctor: $hosts hosts in $seconds s"
