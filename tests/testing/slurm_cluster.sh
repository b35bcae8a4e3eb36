#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for tests: its own munged,
# slurmctld and slurmd, all state under one directory, ports of its own.
#
#   slurm_cluster.sh start [DIR]  installs slurm-wlm and munge when missing
#                                 (as root, with apt-get), starts the
#                                 daemons, waits until the node is idle and
#                                 prints "export SLURM_CONF=DIR/slurm.conf"
#   slurm_cluster.sh env [DIR]    prints that line for a running cluster
#   slurm_cluster.sh stop [DIR]   stops the daemons and removes DIR
#
# DIR defaults to $DTF_SLURM_DIR, else /tmp/dtf-slurm-<uid>. Needs root
# (SlurmUser=root, slurmd runs jobs as their users). No systemd and no
# cgroups: proctrack/linuxproc, task/none, no accounting database (sacct
# reads the job completion file, jobcomp/filetxt). Every wait is bounded;
# exit 77 when the cluster cannot be had here (not root, no apt-get), 1 when
# a daemon fails (its log is printed).
set -uo pipefail

cmd="${1:-}"
dir="${2:-${DTF_SLURM_DIR:-/tmp/dtf-slurm-$(id -u)}}"
wait_s="${DTF_SLURM_WAIT:-60}"

die() { echo "slurm_cluster: $*" >&2; exit 1; }
skip() { echo "SKIPPED: slurm_cluster: $*" >&2; exit 77; }

missing_packages() {
  [[ -x /usr/sbin/slurmctld && -x /usr/sbin/slurmd && -x /usr/bin/srun ]] ||
    echo slurm-wlm
  [[ -x /usr/sbin/munged ]] || echo munge
}

install_missing() {
  local want
  want="$(missing_packages | tr '\n' ' ')"
  [[ -z "${want// /}" ]] && return 0
  if [[ "$(id -u)" -ne 0 ]] || ! command -v apt-get >/dev/null; then
    skip "${want}missing (apt-get install ${want% })"
  fi
  # Tests that start clusters at once install once: the first holds the
  # lock, the others find the packages there.
  exec 9>/tmp/dtf-slurm-apt.lock
  flock -w 900 9 || die "waited 900 s for another apt-get install"
  want="$(missing_packages | tr '\n' ' ')"
  if [[ -n "${want// /}" ]]; then
    echo "slurm_cluster: installing ${want% }" >&2
    export DEBIAN_FRONTEND=noninteractive
    # shellcheck disable=SC2086  # $want is a list of package names
    apt-get install -y -q -o DPkg::Lock::Timeout=600 $want >&2 ||
      { apt-get update -q >&2 &&
        apt-get install -y -q -o DPkg::Lock::Timeout=600 $want >&2; } ||
      die "apt-get install ${want% } failed"
  fi
  flock -u 9
  exec 9>&-
}

port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Two consecutive free ports from a range the other tests do not use.
free_ports() {
  local tries=0 p
  while ((tries < 200)); do
    p=$((20000 + RANDOM % 20000))
    if port_free "$p" && port_free "$((p + 1))"; then
      echo "$p"
      return 0
    fi
    tries=$((tries + 1))
  done
  die "no two free ports in 20000-40000"
}

# Runs "$@" until it succeeds or $wait_s seconds pass.
wait_for() {
  local what="$1"
  shift
  local deadline=$((SECONDS + wait_s))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
  echo "slurm_cluster: $what after $((SECONDS - start_s))s" >&2
}

show_log() {
  [[ -f "$1" ]] && { echo "--- $1" >&2; tail -n 30 "$1" >&2; }
}

node_idle() {
  [[ "$(SLURM_CONF="$dir/slurm.conf" sinfo -h -N -o %t 2>/dev/null)" == idle ]]
}

start() {
  [[ "$(id -u)" -eq 0 ]] || skip "needs root (SlurmUser=root)"
  install_missing
  [[ -e "$dir/slurm.conf" ]] && die "$dir holds a cluster already (stop it first)"
  mkdir -p "$dir"/{state,spool,log,munge} || die "cannot create $dir"
  chmod 0700 "$dir" "$dir/munge"
  start_s=$SECONDS

  # munge: a key and a daemon of this cluster's own.
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
  chmod 0400 "$dir/munge/munge.key"
  local sock="$dir/munge/munge.socket"
  /usr/sbin/munged --force --socket="$sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" ||
    { show_log "$dir/log/munged.log"; die "munged did not start"; }
  wait_for "munged up" test -S "$sock" ||
    { show_log "$dir/log/munged.log"; die "munged socket $sock missing"; }

  local host cpus mem port
  host="$(hostname -s)"
  # Tests start more tasks than a small machine has cores: the node claims
  # at least 16 CPUs (SlurmdParameters=config_overrides lets slurmd accept
  # it).
  cpus="$(nproc)"
  ((cpus < 16)) && cpus=16
  mem="$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)"
  port="$(free_ports)"
  cat >"$dir/slurm.conf" <<CONF
ClusterName=dtf-test
SlurmctldHost=${host}(127.0.0.1)
SlurmctldPort=${port}
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${sock}
StateSaveLocation=${dir}/state
SlurmdSpoolDir=${dir}/spool/%n
SlurmctldPidFile=${dir}/slurmctld.pid
SlurmdPidFile=${dir}/slurmd.pid
SlurmctldLogFile=${dir}/log/slurmctld.log
SlurmdLogFile=${dir}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=${dir}/log/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
SchedulerType=sched/builtin
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
NodeName=${host} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${mem} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
  export SLURM_CONF="$dir/slurm.conf"
  /usr/sbin/slurmctld -D -i >"$dir/log/slurmctld.out" 2>&1 &
  echo $! >"$dir/slurmctld.bgpid"
  wait_for "slurmctld answers" scontrol ping ||
    { show_log "$dir/log/slurmctld.log"; show_log "$dir/log/slurmctld.out"
      stop_daemons; die "slurmctld did not answer in ${wait_s}s"; }
  /usr/sbin/slurmd -D -N "$host" >"$dir/log/slurmd.out" 2>&1 &
  echo $! >"$dir/slurmd.bgpid"
  wait_for "node $host idle" node_idle ||
    { show_log "$dir/log/slurmd.log"; show_log "$dir/log/slurmd.out"
      SLURM_CONF="$dir/slurm.conf" sinfo -N >&2
      stop_daemons; die "node $host not idle in ${wait_s}s"; }
  echo "export SLURM_CONF=$dir/slurm.conf"
}

# Stops one daemon from its pid file: TERM, then KILL after 10 s.
stop_pid() {
  local file="$1" pid
  [[ -f "$file" ]] || return 0
  pid="$(cat "$file")"
  [[ -n "$pid" ]] && kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.2
  done
  kill -KILL "$pid" 2>/dev/null
}

stop_daemons() {
  if [[ -f "$dir/slurm.conf" ]]; then
    # Jobs still running are cancelled first, so no step outlives slurmd.
    SLURM_CONF="$dir/slurm.conf" timeout 10 scancel --user=root \
      >/dev/null 2>&1 || true
  fi
  stop_pid "$dir/slurmd.bgpid"
  stop_pid "$dir/slurmctld.bgpid"
  stop_pid "$dir/munge/munged.pid"
}

case "$cmd" in
  start) start ;;
  env)
    [[ -f "$dir/slurm.conf" ]] || die "no cluster in $dir"
    echo "export SLURM_CONF=$dir/slurm.conf"
    ;;
  stop)
    stop_daemons
    rm -rf "$dir"
    ;;
  *)
    echo "usage: slurm_cluster.sh start|env|stop [DIR]" >&2
    exit 2
    ;;
esac
