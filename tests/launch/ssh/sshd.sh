#!/usr/bin/env bash
# The OpenSSH server fixture for tests, shell end-to-end tests and benchmarks:
# throwaway sshd instances on loopback addresses, all state under one DIR.
#
#   sshd.sh keys DIR                       client key DIR/id_ed25519 (+ .pub)
#                                          and DIR/authorized_keys holding it
#   sshd.sh start DIR NAME ADDR PORT       a server in DIR/NAME listening on
#                                          ADDR:PORT (host key, config, log
#                                          DIR/NAME/sshd.log); returns once it
#                                          listens, and prints the port (also
#                                          in DIR/NAME/port). PORT 0: a free
#                                          port, another one tried when some
#                                          other program takes it first
#   sshd.sh start DIR NAME ADDR PORT no-sftp
#                                          the same, without the SFTP
#                                          subsystem (a host dtf must refuse)
#   sshd.sh known-host DIR NAME ADDR PORT  appends "[ADDR]:PORT <host key>" to
#                                          DIR/known_hosts
#   sshd.sh new-host-key DIR NAME          replaces the server's host key (takes
#                                          effect on the next start)
#   sshd.sh stop DIR NAME                  stops that server and its sessions
#   sshd.sh ssh-table DIR                  prints the [ssh] table of a dtf
#                                          profile for these servers: this
#                                          user, DIR's client key and
#                                          known_hosts, no ssh_config, a 3 s
#                                          connect timeout
#
# Needs /usr/sbin/sshd (or $SSHD) and ssh-keygen; run as root or as the user
# that logs in (sessions run as the user sshd runs as when not root).
set -euo pipefail

SSHD="${SSHD:-/usr/sbin/sshd}"

die() {
  echo "sshd.sh: $*" >&2
  exit 1
}

usage() {
  die "usage: sshd.sh keys DIR | start DIR NAME ADDR PORT [no-sftp] |" \
    "known-host DIR NAME ADDR PORT | new-host-key DIR NAME | stop DIR NAME |" \
    "ssh-table DIR"
}

abspath() {
  mkdir -p "$1"
  (cd "$1" && pwd)
}

cmd_keys() {
  local dir
  dir="$(abspath "$1")"
  if [[ ! -f "$dir/id_ed25519" ]]; then
    ssh-keygen -q -t ed25519 -N '' -C dtf-test-client -f "$dir/id_ed25519"
  fi
  if [[ ! -f "$dir/authorized_keys" ]]; then
    cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
    chmod 600 "$dir/authorized_keys"
  fi
}

host_key_file() {
  echo "$1/$2/ssh_host_ed25519_key"
}

make_host_key() {
  local key="$1"
  rm -f "$key" "$key.pub"
  ssh-keygen -q -t ed25519 -N '' -C "dtf-test-host" -f "$key"
}

# A port to try for a server: below the kernel's ephemeral range, so that
# no outgoing connection is handed it meanwhile.
candidate_port() {
  local low=32768
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  ((low > 11000)) || low=32768
  echo $((10000 + (RANDOM * 32768 + RANDOM) % (low - 10000)))
}

# run_sshd HOME: runs sshd in the foreground (-D), in the background, and
# waits (up to 60 s) until it has written its pid file, which sshd does only
# once it listens. Returns 0 then; 2 when sshd exited because the address
# was in use; 1 on any other failure.
run_sshd() {
  local home="$1"
  local pid i logged=0
  [[ -f "$home/sshd.log" ]] && logged="$(stat -c %s "$home/sshd.log")"
  "$SSHD" -D -f "$home/sshd_config" -E "$home/sshd.log" \
    </dev/null >/dev/null 2>&1 &
  pid=$!
  for ((i = 0; i < 1200; i++)); do
    if [[ -s "$home/sshd.pid" && "$(cat "$home/sshd.pid")" == "$pid" ]]; then
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid" 2>/dev/null || true
      tail -c +$((logged + 1)) "$home/sshd.log" 2>/dev/null |
        grep -q "Address already in use" && return 2
      return 1
    fi
    sleep 0.05
  done
  kill "$pid" 2>/dev/null || true
  return 1
}

cmd_start() {
  local dir name addr port sftp="Subsystem sftp internal-sftp"
  dir="$(abspath "$1")" name="$2" addr="$3" port="$4"
  if [[ $# -eq 5 ]]; then
    [[ "$5" == no-sftp ]] || usage
    sftp=""
  fi
  [[ -x "$SSHD" ]] || die "$SSHD not found"
  [[ -f "$dir/authorized_keys" ]] || cmd_keys "$dir"
  local home="$dir/$name"
  mkdir -p "$home"
  local key
  key="$(host_key_file "$dir" "$name")"
  [[ -f "$key" ]] || make_host_key "$key"
  # Privilege separation wants its empty directory.
  mkdir -p /run/sshd 2>/dev/null || true
  local chosen="$port" attempt rc
  for ((attempt = 1; ; attempt++)); do
    [[ "$port" != 0 ]] || chosen="$(candidate_port)"
    write_config "$dir" "$home" "$key" "$addr" "$chosen" "$sftp"
    rm -f "$home/sshd.pid"
    rc=0
    run_sshd "$home" || rc=$?
    if ((rc == 0)); then
      echo "$chosen" >"$home/port"
      echo "$chosen"
      return 0
    fi
    if ((rc != 2 || port != 0 || attempt >= 20)); then
      echo "sshd.sh: sshd did not start listening on $addr:$chosen" >&2
      tail -n 20 "$home/sshd.log" >&2
      return 1
    fi
  done
}

# write_config DIR HOME KEY ADDR PORT SFTP: HOME/sshd_config, with the line
# SFTP (the Subsystem line, or none when empty).
write_config() {
  local dir="$1" home="$2" key="$3" addr="$4" port="$5" sftp="$6"
  cat >"$home/sshd_config" <<EOF
ListenAddress $addr:$port
HostKey $key
AuthorizedKeysFile $dir/authorized_keys
PidFile $home/sshd.pid
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
AllowTcpForwarding yes
$sftp
AcceptEnv none
MaxStartups 100:30:200
MaxSessions 100
LogLevel DEBUG1
EOF
}

cmd_known_host() {
  local dir name addr port
  dir="$(abspath "$1")" name="$2" addr="$3" port="$4"
  local pub
  pub="$(host_key_file "$dir" "$name").pub"
  [[ -f "$pub" ]] || die "no host key $pub (start the server first)"
  local type blob
  read -r type blob _ <"$pub"
  local host="$addr"
  [[ "$port" == 22 ]] || host="[$addr]:$port"
  echo "$host $type $blob" >>"$dir/known_hosts"
  chmod 600 "$dir/known_hosts"
}

cmd_new_host_key() {
  local dir
  dir="$(abspath "$1")"
  make_host_key "$(host_key_file "$dir" "$2")"
}

# Whether process PID is still running (a zombie waiting for its reaper is
# not: it has closed everything).
alive() {
  local state
  state="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" || return 1
  [[ -n "$state" && "$state" != Z ]]
}

cmd_stop() {
  local dir name
  dir="$(abspath "$1")" name="$2"
  local pid_file="$dir/$name/sshd.pid"
  [[ -f "$pid_file" ]] || return 0
  local pid
  pid="$(cat "$pid_file")"
  # Sessions are children of the listener (per-connection sshd processes).
  local children
  children="$(pgrep -P "$pid" 2>/dev/null || true)"
  kill "$pid" 2>/dev/null || true
  local child
  for child in $children; do
    kill "$child" 2>/dev/null || true
  done
  local i
  for ((i = 0; i < 100; i++)); do
    alive "$pid" || break
    sleep 0.02
  done
  if alive "$pid"; then
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pid_file"
}

[[ $# -ge 2 ]] || usage
command="$1"
shift
cmd_ssh_table() {
  local dir
  dir="$(abspath "$1")"
  cat <<TOML
[ssh]
user = "$(id -un)"
identity_file = "$dir/id_ed25519"
known_hosts = "$dir/known_hosts"
config = "none"
connect_timeout = 3
TOML
}

case "$command" in
  keys) [[ $# -eq 1 ]] || usage && cmd_keys "$@" ;;
  start) [[ $# -eq 4 || $# -eq 5 ]] || usage && cmd_start "$@" ;;
  known-host) [[ $# -eq 4 ]] || usage && cmd_known_host "$@" ;;
  new-host-key) [[ $# -eq 2 ]] || usage && cmd_new_host_key "$@" ;;
  stop) [[ $# -eq 2 ]] || usage && cmd_stop "$@" ;;
  ssh-table) [[ $# -eq 1 ]] || usage && cmd_ssh_table "$@" ;;
  *) usage ;;
esac
