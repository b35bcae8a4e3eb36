#!/usr/bin/env bash
# bench/faults/run.sh [--dtf PATH] [--work DIR] [--runs N] [--ssh-runs N]
#                     [--slurm-runs N] [--net-runs N] [--k8s-runs N]
#                     [--cells REGEX,...] [--no-ssh] [--no-slurm] [--no-net]
#                     [--no-k8s] [--fault-step N] [--freeze-steps N]
#                     [--cell-timeout S] [--k8s-tick S]
#
# The fault matrix: a real job (the census job of examples/census, 8 epochs
# at batch 32, a checkpoint every 200 steps, 2 PS x 2 workers) launched with
# dtf launch on the local backend, on the SSH backend (two hosts, each a
# real sshd on its own loopback address, 127.0.0.2 and 127.0.0.3:
# tests/launch/ssh/sshd.sh), on the Slurm backend (a real single-node
# Slurm: tests/testing/slurm_cluster.sh) and on the Kubernetes backend (an
# Indexed Job applied to tests/launch/k8s/process_cluster.py as kubectl,
# whose pods are local processes: process_cluster_env.sh), in PS sync, PS
# async and allreduce mode, and in each run one fault: SIGKILL of a
# worker, a parameter server, the chief or the launcher; SIGSTOP of a
# worker; a worker's training thread frozen alone (DTF_TEST_FREEZE_AT);
# the SSH sessions to a host dropped; the output directory's file system
# filled (a 16 MiB tmpfs mounted here); and on the SSH backend across two
# network namespaces (tests/testing/netns_hosts.sh, an sshd in each), the
# link of the second cut (ip link set down) for 1.5, 8, 25 and 45 s. N
# runs per cell (--runs for the local cells, default 2; --ssh-runs,
# --slurm-runs, --net-runs and --k8s-runs for the others, default 1);
# --k8s-tick S: how often the stand-in's Job controller runs (default 0.5;
# a failed pod is replaced up to that late).
# Prints the table (bench/README.md, "faults") and writes WORK/results.json;
# each run's launcher output and record are in WORK/cells/<cell>/<n>/.
#
# Builds dtf (scripts/build.sh dtf) unless --dtf is given. Needs root (the
# tmpfs mount, the Slurm daemons), /usr/sbin/sshd for the SSH cells
# (--no-ssh without) and installs slurm-wlm and munge when missing
# (--no-slurm without); the cut cells need ip netns (--no-net without);
# the Kubernetes cells need the venv of tests/launch/k8s_env.sh (PyYAML),
# made under build/ when missing (exit 77 when it cannot be: --no-k8s
# without). On exit, whatever way: the servers, the clusters and the
# namespaces are stopped, the tmpfs unmounted and every process of a run
# of this matrix killed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dtf=""
work=""
drive_args=()
no_ssh=0
no_slurm=0
no_net=0
no_k8s=0
usage() {
  echo "usage: $0 [--dtf PATH] [--work DIR] [--runs N] [--ssh-runs N]" \
    "[--slurm-runs N] [--net-runs N] [--k8s-runs N] [--cells REGEX,...]" \
    "[--no-ssh] [--no-slurm] [--no-net] [--no-k8s] [--fault-step N]" \
    "[--freeze-steps N] [--cell-timeout S] [--k8s-tick S]" >&2
  exit 2
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dtf) dtf="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --runs | --ssh-runs | --slurm-runs | --net-runs | --k8s-runs | --cells | --fault-step | --freeze-steps | --cell-timeout | --k8s-tick)
      [[ $# -ge 2 ]] || usage
      drive_args+=("$1" "$2"); shift 2 ;;
    --no-ssh) no_ssh=1; drive_args+=(--no-ssh); shift ;;
    --no-slurm) no_slurm=1; drive_args+=(--no-slurm); shift ;;
    --no-net) no_net=1; drive_args+=(--no-net); shift ;;
    --no-k8s) no_k8s=1; drive_args+=(--no-k8s); shift ;;
    *) usage ;;
  esac
done
if [[ -z "$dtf" ]]; then
  (cd "$repo" && nice -n 19 scripts/build.sh dtf > /dev/null)
  dtf="$repo/build/cmd/dtf"
fi
dtf="$(realpath "$dtf")"
work="${work:-$repo/build/bench-faults}"
shared="$(realpath "$repo/../shared")"
[[ -d "$shared/data/adult" ]] || shared=/work/shared
sshd_sh="$repo/tests/launch/ssh/sshd.sh"
cluster_sh="$repo/tests/testing/slurm_cluster.sh"
slurm_dir=""
k8s_work=""
net_dir="$work/netssh"
net_up=0
# shellcheck disable=SC2317  # called by netns_hosts.sh
log() { echo "run.sh: $*" >&2; }
# shellcheck source=tests/testing/netns_hosts.sh
source "$repo/tests/testing/netns_hosts.sh"
py=/usr/bin/python3
mkdir -p "$work"
work="$(realpath "$work")"
tiny="$work/tiny"
ssh_dir="$work/ssh"
# What an interrupted earlier run left.
umount "$tiny" 2>/dev/null || true
for name in h1 h2; do bash "$sshd_sh" stop "$ssh_dir" "$name" 2>/dev/null || true; done
for name in na nb; do bash "$sshd_sh" stop "$net_dir" "$name" 2>/dev/null || true; done
ip netns del fm-a 2>/dev/null || true
ip netns del fm-b 2>/dev/null || true
ip link del vfm1o 2>/dev/null || true
ip link del vfm2o 2>/dev/null || true
ip link del brfm 2>/dev/null || true
rm -rf "$work"
mkdir -p "$work" "$tiny"
mounted=""
drive_pid=""

# kill_runs: every process whose command line names this matrix's work
# directory (tasks, host-side monitors, launchers), by pid.
# shellcheck disable=SC2317  # kill_runs and cleanup run from the traps
kill_runs() {
  local pid
  for pid in $(pgrep -f -- "$work/" || true); do
    [[ "$pid" == "$$" || "$pid" == "$BASHPID" ]] && continue
    kill -9 "$pid" 2>/dev/null || true
  done
}

# shellcheck disable=SC2317
cleanup() {
  local rc=$?
  if [[ -n "$drive_pid" ]]; then kill "$drive_pid" 2>/dev/null || true; fi
  if [[ -n "$k8s_work" ]]; then
    # As process_cluster_cleanup: every object of the stand-in deleted (its
    # pods stopped); then its directory.
    kubectl delete jobs.batch,services,configmaps,secrets --ignore-not-found \
      > /dev/null 2>&1 || true
    for pid in $(pgrep -f -- "$k8s_work/" || true); do
      kill -9 "$pid" 2>/dev/null || true
    done
    rm -rf "$k8s_work"
  fi
  kill_runs
  for name in h1 h2; do bash "$sshd_sh" stop "$ssh_dir" "$name" 2>/dev/null || true; done
  if [[ $net_up == 1 ]]; then
    for name in na nb; do bash "$sshd_sh" stop "$net_dir" "$name" 2>/dev/null || true; done
    # The sshd sessions whose connections a cut left dangling outlive their
    # listener (and keep the namespace and its link): killed by pid.
    for ns in fm-a fm-b; do
      for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    done
    hosts_teardown
  fi
  if [[ -n "$slurm_dir" ]]; then
    for job in $(squeue -h -o '%i %j' 2>/dev/null | awk '$2 ~ /^dtf-/ {print $1}'); do
      scancel "$job" 2>/dev/null || true
    done
    bash "$cluster_sh" stop "$slurm_dir" || true
  fi
  kill_runs
  if [[ -n "$mounted" ]]; then umount "$mounted" 2>/dev/null || umount -l "$mounted" || true; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The output directory's small file system for the disk-full cells.
if ! mount -t tmpfs -o size=16m tmpfs "$tiny"; then
  echo "run.sh: mounting a tmpfs failed (needs root or CAP_SYS_ADMIN)" >&2
  exit 1
fi
mounted="$tiny"

# The job: examples/census over the shared Adult files, 8 epochs at batch
# 32 (about 4000 steps of 2 workers, a few seconds), a checkpoint every 200
# steps, short timeouts so that a dead or frozen worker is found quickly.
mkdir -p "$work/census/profiles"
job="$work/census/dtf.toml"
sed -e "s#\.\./\.\./\.\./shared#$shared#g" \
  -e 's/^batch_size = 256$/batch_size = 32/' \
  -e 's/^epochs = 10$/epochs = 8\ncheckpoint_every_steps = 200\nkeep_checkpoints = 3\nlog_every_steps = 50\nheartbeat_timeout = 3\nstall_timeout = 6\ncoordinator_timeout = 15/' \
  "$repo/examples/census/dtf.toml" > "$job"
grep -q '^checkpoint_every_steps = 200$' "$job" || {
  echo "run.sh: examples/census/dtf.toml changed; update the edits above" >&2
  exit 1
}
(cd "$work/census" && "$dtf" gen-records --job "$job" > /dev/null)

# The SSH hosts.
if [[ $no_ssh == 0 ]]; then
  [[ -x /usr/sbin/sshd ]] || {
    echo "run.sh: /usr/sbin/sshd is missing (apt-get install openssh-server, or --no-ssh)" >&2
    exit 1
  }
  bash "$sshd_sh" keys "$ssh_dir"
  port1="$(bash "$sshd_sh" start "$ssh_dir" h1 127.0.0.2 0)"
  port2="$(bash "$sshd_sh" start "$ssh_dir" h2 127.0.0.3 0)"
  bash "$sshd_sh" known-host "$ssh_dir" h1 127.0.0.2 "$port1"
  bash "$sshd_sh" known-host "$ssh_dir" h2 127.0.0.3 "$port2"
  # 127.0.0.3 has a second slot: the add-worker cells' reserved worker:2.
  printf '127.0.0.2 slots=1 port=%s\n127.0.0.3 slots=2 port=%s\n' "$port1" "$port2" \
    > "$work/census/profiles/ssh.hosts"
  cat > "$work/census/profiles/ssh-base.toml" <<TOML
backend = "ssh"
hostfile = "ssh.hosts"
with_data = true
work_dir = "$work/remote/{host}"
$(bash "$sshd_sh" ssh-table "$ssh_dir")
keepalive = 2
TOML
  # Ship the runtime and the job once, so that no cell's time includes it.
  sed 's/^\[ssh\]/ps = 2\nworkers = 2\n[ssh]/' "$work/census/profiles/ssh-base.toml" \
    > "$work/census/profiles/ssh-warm.toml"
  (cd "$work/census" && "$dtf" launch --profile ssh-warm --set train.steps=10 \
    --set "train.output_dir=$work/warm-out" > "$work/warm.out" 2> "$work/warm.err") || {
    tail -n 20 "$work/warm.err" >&2
    echo "run.sh: the SSH warm-up launch failed" >&2
    exit 1
  }
fi

# The cut cells' hosts: two network namespaces on one bridge, an sshd in
# each; the second's link (outside end) is what a cut takes down.
net_args=()
if [[ $no_net == 0 ]]; then
  HOSTS_NET=10.236
  hosts_init fm
  net_up=1
  hosts_add a 1 10gbit
  hosts_add b 2 10gbit
  ip_a="$(host_ip a)"
  ip_b="$(host_ip b)"
  bash "$sshd_sh" keys "$net_dir"
  nport_a="$(ip netns exec fm-a bash "$sshd_sh" start "$net_dir" na "$ip_a" 0)"
  nport_b="$(ip netns exec fm-b bash "$sshd_sh" start "$net_dir" nb "$ip_b" 0)"
  bash "$sshd_sh" known-host "$net_dir" na "$ip_a" "$nport_a"
  bash "$sshd_sh" known-host "$net_dir" nb "$ip_b" "$nport_b"
  printf '%s slots=1 port=%s\n%s slots=1 port=%s\n' "$ip_a" "$nport_a" "$ip_b" "$nport_b" \
    > "$work/census/profiles/net.hosts"
  cat > "$work/census/profiles/net-base.toml" <<TOML
backend = "ssh"
hostfile = "net.hosts"
with_data = true
work_dir = "$work/remote/{host}"
$(bash "$sshd_sh" ssh-table "$net_dir")
keepalive = 2
TOML
  sed 's/^\[ssh\]/ps = 2\nworkers = 2\n[ssh]/' "$work/census/profiles/net-base.toml" \
    > "$work/census/profiles/net-warm.toml"
  (cd "$work/census" && "$dtf" launch --profile net-warm --set train.steps=10 \
    --set "train.output_dir=$work/net-warm-out" > "$work/net-warm.out" 2> "$work/net-warm.err") || {
    tail -n 20 "$work/net-warm.err" >&2
    echo "run.sh: the warm-up launch across the namespaces failed" >&2
    exit 1
  }
  net_args=(--net-link "v${HOSTS_TAG}2o")
fi

# The Slurm cluster: one node, its daemons under a directory of their own.
if [[ $no_slurm == 0 ]]; then
  slurm_dir="$(mktemp -d /tmp/dtf-faults-slurm.XXXXXX)"
  env_line="$(bash "$cluster_sh" start "$slurm_dir")" || {
    echo "run.sh: the Slurm cluster did not start (--no-slurm without)" >&2
    exit 1
  }
  eval "$env_line"
  cat > "$work/census/profiles/slurm-base.toml" <<TOML
backend = "slurm"
[slurm]
nodes = 1
time_limit = "00:20:00"
base_port = $((20000 + RANDOM % 20000))
TOML
fi

# The Kubernetes cluster: process_cluster.py as kubectl, first on PATH, its
# state in a directory of its own (process_cluster_start; its variables
# kept apart from run.sh's, its exit trap replaced by run.sh's cleanup).
# The pods see the data and the output at this machine's paths: the job's
# data paths (under $shared/data) and every cell's output directory (under
# $work, the tmpfs too) land in the volumes' mount paths. Each pod makes
# the records in an init container (gen_records), as the k8s tests do.
k8s_start() {
  local dtf="$dtf" src build shared="$shared" work cluster python
  # shellcheck source=tests/launch/k8s/process_cluster_env.sh
  source "$repo/tests/launch/k8s/process_cluster_env.sh"
  process_cluster_start "$dtf" "$repo" "$repo/build" "$shared" \
    data/adult/adult.data dtf-faults-k8s
  trap cleanup EXIT
  k8s_work="$work"
  drive_args+=(--k8s-cluster "$cluster")
}
if [[ $no_k8s == 0 ]]; then
  k8s_start
  cat > "$work/census/profiles/k8s-base.toml" <<TOML
backend = "kubernetes"
[kubernetes]
image = "dtf:test"
job_dir = "/srv/census"
data = { host_path = "$shared/data", mount_path = "$shared/data" }
output = { host_path = "$work", mount_path = "$work" }
gen_records = true
TOML
fi

"$py" "$here/drive.py" --dtf "$dtf" --job "$job" --work "$work" \
  --ssh-dir "$ssh_dir" --tiny "$tiny" "${net_args[@]}" "${drive_args[@]}" &
drive_pid=$!
rc=0
wait "$drive_pid" || rc=$?
drive_pid=""
exit "$rc"
