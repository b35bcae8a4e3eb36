# Sourced by bench/scaling/run.sh and tests/e2e/attacker.sh: emulated hosts
# on this machine. Each host is a network namespace joined by a veth pair to one bridge, its link
# shaped by `tc ... tbf` on both ends (no netem: this kernel has none, so no
# added latency), and a CPU cgroup with its own quota (cgroup v1
# cpu.cfs_quota_us / cpu.cfs_period_us, or v2 cpu.max, whichever the machine
# mounts). A command runs "on" a host through host_run: it enters the
# namespace, puts itself into the host's cgroup and then runs, so every
# process and thread it starts is inside both.
#
# Needs root, iproute2 (ip, tc) and a cpu cgroup controller. The sourcing
# script defines log(), calls hosts_init once, hosts_add per host, and
# hosts_teardown on exit (it removes every namespace, link and cgroup, and
# kills whatever still runs in the hosts' cgroups).

# hosts_init TAG: TAG (a few letters/digits, unique among concurrent runs)
# names the bridge, the namespaces and the cgroups. The hosts' network is
# $HOSTS_NET.0.0/16 (HOSTS_NET, default 10.231), the bridge its .0.1.
hosts_init() {
  HOSTS_TAG="$1"
  HOSTS_BRIDGE="br${HOSTS_TAG}"
  HOSTS_NET="${HOSTS_NET:-10.231}"
  HOSTS_NAMES=()
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    HOSTS_CG_VERSION=2
    HOSTS_CG_ROOT="/sys/fs/cgroup/dtf-scaling-$HOSTS_TAG"
    grep -qw cpu /sys/fs/cgroup/cgroup.controllers ||
      { echo "cgroup v2 without the cpu controller" >&2; return 1; }
    grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control ||
      echo +cpu > /sys/fs/cgroup/cgroup.subtree_control
    mkdir -p "$HOSTS_CG_ROOT"
    echo +cpu > "$HOSTS_CG_ROOT/cgroup.subtree_control"
  elif [[ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]]; then
    HOSTS_CG_VERSION=1
    HOSTS_CG_ROOT="/sys/fs/cgroup/cpu/dtf-scaling-$HOSTS_TAG"
    mkdir -p "$HOSTS_CG_ROOT"
  else
    echo "no cpu cgroup controller (neither v1 /sys/fs/cgroup/cpu nor v2)" >&2
    return 1
  fi
  ip link add "$HOSTS_BRIDGE" type bridge
  ip addr add "$HOSTS_NET.0.1/16" dev "$HOSTS_BRIDGE"
  ip link set "$HOSTS_BRIDGE" up
}

# tbf's burst: at least 4 ms of the rate and 256 KiB (a veth carries GSO
# packets of up to 64 KiB; a burst below that drops them all).
hosts_burst() {
  local rate="$1" bps
  case "$rate" in
    *gbit) bps=$(( ${rate%gbit} * 1000000000 / 8 )) ;;
    *mbit) bps=$(( ${rate%mbit} * 1000000 / 8 )) ;;
    *) echo "rate: expected Ngbit or Nmbit, got $rate" >&2; return 1 ;;
  esac
  local b=$(( bps / 250 ))
  (( b >= 262144 )) || b=262144
  echo "$b"
}

# hosts_add NAME INDEX RATE: host NAME at $HOSTS_NET.<INDEX / 250>.<INDEX %
# 250 + 2>, its link shaped to RATE (e.g. 10gbit, 1gbit) in both directions.
# Prints nothing; host_ip NAME gives the address.
hosts_add() {
  local name="$1" index="$2" rate="$3" ns="${HOSTS_TAG}-$1"
  local outside="v${HOSTS_TAG}${index}o" inside="v${HOSTS_TAG}${index}i"
  local ip="$HOSTS_NET.$(( index / 250 )).$(( index % 250 + 2 ))"
  local burst
  burst=$(hosts_burst "$rate")
  ip netns add "$ns"
  HOSTS_NAMES+=("$name")
  ip link add "$outside" type veth peer name "$inside"
  ip link set "$inside" netns "$ns"
  ip link set "$outside" master "$HOSTS_BRIDGE" up
  ip -n "$ns" addr add "$ip/16" dev "$inside"
  ip -n "$ns" link set "$inside" up
  ip -n "$ns" link set lo up
  tc qdisc add dev "$outside" root tbf rate "$rate" burst "$burst" latency 20ms
  ip netns exec "$ns" tc qdisc add dev "$inside" root tbf rate "$rate" \
    burst "$burst" latency 20ms
  mkdir -p "$HOSTS_CG_ROOT/$name"
  eval "HOSTS_IP_${name//[^A-Za-z0-9]/_}=$ip"
}

host_ip() { local v="HOSTS_IP_${1//[^A-Za-z0-9]/_}"; echo "${!v}"; }

# host_quota NAME CORES [PERIOD_US]: the host may use CORES (e.g. 0.2) of
# CPU time per period (default 100000 us).
host_quota() {
  local name="$1" cores="$2" period="${3:-100000}" quota
  quota=$(awk -v c="$cores" -v p="$period" 'BEGIN { printf "%d", c * p }')
  if (( HOSTS_CG_VERSION == 2 )); then
    echo "$quota $period" > "$HOSTS_CG_ROOT/$name/cpu.max"
  else
    echo "$period" > "$HOSTS_CG_ROOT/$name/cpu.cfs_period_us"
    echo "$quota" > "$HOSTS_CG_ROOT/$name/cpu.cfs_quota_us"
  fi
}

# host_cpu_stat NAME: "periods throttled throttled_us" of the host's cgroup
# so far.
host_cpu_stat() {
  awk -v v="$HOSTS_CG_VERSION" '
    $1 == "nr_periods" { p = $2 }
    $1 == "nr_throttled" { t = $2 }
    $1 == "throttled_time" && v == 1 { us = $2 / 1000 }
    $1 == "throttled_usec" && v == 2 { us = $2 }
    END { printf "%d %d %d\n", p, t, us }' "$HOSTS_CG_ROOT/$1/cpu.stat"
}

# host_run NAME CPU_FILE CMD...: runs CMD on host NAME (in the foreground;
# put it in the background with &). When CMD ends, CPU_FILE gets the CPU
# seconds it and its children used ("user system"), and its status is
# returned.
host_run() {
  local name="$1" cpu_file="$2" procs
  shift 2
  if (( HOSTS_CG_VERSION == 2 )); then
    procs="$HOSTS_CG_ROOT/$name/cgroup.procs"
  else
    procs="$HOSTS_CG_ROOT/$name/tasks"
  fi
  # Into the cgroup first: `ip netns exec` mounts the namespace's own /sys,
  # where the cgroup files are out of sight.
  bash -c '
    echo $$ > "$1" || exit 125
    cpu="$2"; ns="$3"; shift 3
    ip netns exec "$ns" "$@"; rc=$?
    times > "$cpu.times"  # not in a pipe: a subshell has no children
    awk "NR == 2 { for (i = 1; i <= 2; i++) { split(\$i, a, /[ms]/);
      s[i] = a[1] * 60 + a[2] } print s[1], s[2] }" "$cpu.times" > "$cpu"
    rm -f "$cpu.times"
    exit $rc' host_run "$procs" "$cpu_file" "${HOSTS_TAG}-$name" "$@"
}

# hosts_kill: ends every process in the hosts' cgroups (TERM, then KILL
# after 3 s).
hosts_kill() {
  local name f pids sig
  [[ -n "${HOSTS_CG_ROOT:-}" && -d "$HOSTS_CG_ROOT" ]] || return 0
  for sig in TERM KILL; do
    pids=""
    for name in "${HOSTS_NAMES[@]}"; do
      f="$HOSTS_CG_ROOT/$name/cgroup.procs"
      [[ -f "$f" ]] && pids+=" $(tr '\n' ' ' < "$f")"
    done
    [[ -n "${pids// /}" ]] || return 0
    # shellcheck disable=SC2086  # a list of pids
    kill -s "$sig" $pids 2> /dev/null || true
    [[ "$sig" == KILL ]] || sleep 3
  done
}

hosts_teardown() {
  local name
  [[ -n "${HOSTS_TAG:-}" ]] || return 0
  hosts_kill
  for name in "${HOSTS_NAMES[@]}"; do
    ip netns del "${HOSTS_TAG}-$name" 2> /dev/null || true
    rmdir "$HOSTS_CG_ROOT/$name" 2> /dev/null || true
  done
  ip link del "$HOSTS_BRIDGE" 2> /dev/null || true
  rmdir "$HOSTS_CG_ROOT" 2> /dev/null || true
  HOSTS_TAG=""
}
