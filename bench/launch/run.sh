#!/usr/bin/env bash
# bench/launch/run.sh [--dtf PATH] [--work DIR] [--hosts 2,4,8] [--repeats N]
#
# Wall time from `dtf launch` to every task running (each task's ready file
# seen by the launcher) on N hosts over SSH, each host a real sshd on its own
# loopback address (127.0.0.2 ...; tests/launch/ssh/sshd.sh) with a work
# directory of its own, so every host is shipped to as a separate machine
# would be. For each N: a first launch into empty work directories (packing
# cached or not, every archive shipped) and a second launch with everything
# cached (nothing packed or shipped). One worker per host and one parameter
# server per two hosts; the census job (examples/census) with its data.
# Beside it, the time OpenSSH's own client takes to run `true` on the same N
# hosts at once (connection, key exchange, authentication: the floor any SSH
# launcher pays). Prints a table and writes WORK/results.json.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dtf="$repo/build/cmd/dtf"
work=""
host_counts="2,4,8"
repeats=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dtf) dtf="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --hosts) host_counts="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    *) echo "usage: $0 [--dtf PATH] [--work DIR] [--hosts 2,4,8] [--repeats N]" >&2; exit 2 ;;
  esac
done
dtf="$(realpath "$dtf")"
work="${work:-$repo/build/bench-launch}"
shared="$(realpath "$repo/../shared")"
sshd_sh="$repo/tests/launch/ssh/sshd.sh"
py=/usr/bin/python3
rm -rf "$work"
mkdir -p "$work"
work="$(realpath "$work")"
ssh_dir="$work/ssh"
max_hosts=0
IFS=, read -r -a counts <<< "$host_counts"
for n in "${counts[@]}"; do ((n > max_hosts)) && max_hosts=$n; done

cleanup() {
  local i
  for ((i = 1; i <= max_hosts; i++)); do
    bash "$sshd_sh" stop "$ssh_dir" "h$i" 2>/dev/null || true
  done
  pkill -f -- "$work/remote/" 2>/dev/null || true
}
trap cleanup EXIT

bash "$sshd_sh" keys "$ssh_dir"
ports=()
for ((i = 1; i <= max_hosts; i++)); do
  addr="127.0.0.$((i + 1))"
  port="$(bash "$sshd_sh" start "$ssh_dir" "h$i" "$addr" 0)"
  bash "$sshd_sh" known-host "$ssh_dir" "h$i" "$addr" "$port"
  ports+=("$port")
done

mkdir -p "$work/census/profiles"
job="$work/census/dtf.toml"
sed "s#\.\./\.\./\.\./shared#$shared#g" "$repo/examples/census/dtf.toml" > "$job"
(cd "$work/census" && "$dtf" gen-records --job "$job" > /dev/null)
# The packed runtime is cached beside the job once; the first launch of each
# size still ships everything to empty work directories.
user="$(id -un)"
for n in "${counts[@]}"; do
  hostfile="$work/census/profiles/hosts$n"
  : > "$hostfile"
  for ((i = 1; i <= n; i++)); do
    echo "127.0.0.$((i + 1)) slots=1 port=${ports[$((i - 1))]}" >> "$hostfile"
  done
  ps=$(( n / 2 > 0 ? n / 2 : 1 ))
  cat > "$work/census/profiles/hosts$n.toml" <<TOML
backend = "ssh"
hostfile = "hosts$n"
ps = $ps
workers = $n
with_data = true
work_dir = "$work/remote/n$n/{host}"
[ssh]
user = "$user"
identity_file = "$ssh_dir/id_ed25519"
known_hosts = "$ssh_dir/known_hosts"
config = "none"
TOML
done

"$py" "$here/drive.py" --dtf "$dtf" --job "$job" --ssh-dir "$ssh_dir" \
  --hosts "$host_counts" --ports "$(IFS=,; echo "${ports[*]}")" \
  --repeats "$repeats" --work "$work"
