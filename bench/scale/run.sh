#!/usr/bin/env bash
# bench/scale/run.sh [--dtf PATH] [--build DIR] [--work DIR] [--workers N]
#   [--ps N] [--cores C] [--hosts N] [--doctor-hosts N] [--repeats N]
#
# dtf at scale, on this machine:
# 1. a run of --workers (64) workers and --ps (8) parameter servers of a
#    tiny model, every `dtf serve` in a CPU cgroup of its own at --cores
#    (0.05) cores (tests/scale/scale_64.sh): time to each worker's first
#    step, the heartbeats' CPU per worker (the heartbeat thread), the
#    coordinator's CPU per task (its heartbeat handlers; and the chief's
#    whole CPU beside a worker's), the sync barrier's wait at the parameter
#    servers (p50, p99);
# 2. `dtf launch --dry-run --json` of a --hosts (1,000) host hostfile (SSH
#    backend, one task a host: 50 PS and the rest workers): seconds, best
#    and median of --repeats (5), against the goal of 1 s;
# 3. `dtf doctor` against --doctor-hosts (100) sshd servers on 127.0.2.x
#    (tests/scale/doctor_100.sh): every host reported ready, and seconds.
# Prints the figures and writes WORK/results.json. Needs root (cgroups) and
# /usr/sbin/sshd.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dtf=""
build="$repo/build"
work=""
workers=64
ps=8
cores=0.05
hosts=1000
doctor_hosts=100
repeats=5

usage() {
  sed -n '2,3p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dtf) dtf="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --ps) ps="$2"; shift 2 ;;
    --cores) cores="$2"; shift 2 ;;
    --hosts) hosts="$2"; shift 2 ;;
    --doctor-hosts) doctor_hosts="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done
for n in workers ps hosts doctor_hosts repeats; do
  [[ "${!n}" =~ ^[1-9][0-9]*$ ]] ||
    { echo "--${n//_/-}: expected a positive integer, got '${!n}'" >&2; exit 2; }
done
(( hosts > 50 )) || { echo "--hosts: at least 51" >&2; exit 2; }
(( doctor_hosts <= 250 )) || { echo "--doctor-hosts: at most 250" >&2; exit 2; }
log() { echo "bench: $*" >&2; }

mkdir -p "$build"
build="$(realpath "$build")"
[[ -n "$work" ]] || work="$build/bench-scale"
mkdir -p "$work"
work="$(realpath "$work")"
if [[ -z "$dtf" ]]; then
  dtf="$build/cmd/dtf"
  if [[ ! -x "$dtf" ]]; then
    log "building dtf"
    DTF_BUILD_DIR="$build" nice -n 19 bash "$repo/scripts/build.sh" dtf >&2
  fi
fi
dtf="$(realpath "$dtf")"
shared="$(realpath "$repo/../shared")"

# 1. The cluster.
log "$workers workers + $ps PS at $cores cores each"
bash "$repo/tests/scale/scale_64.sh" "$dtf" "$shared" "$work/cluster" \
  "$workers" "$ps" "$cores" | tee "$work/cluster.out" >&2

# 2. The plan of a large hostfile.
mkdir -p "$work/plan"
python3 -c "import sys; print('\n'.join(f'node{i:05d}.example.org' for i in range(int(sys.argv[1]))))" \
  "$hosts" > "$work/plan/cluster.hosts"
printf 'backend = "ssh"\nhostfile = "cluster.hosts"\nps = 50\nworkers = %d\n' \
  $((hosts - 50)) > "$work/plan/big.toml"
cp "$work/cluster/dtf.toml" "$work/plan/dtf.toml"
times=()
for ((r = 0; r < repeats; r++)); do
  t0=$(date +%s%N)
  "$dtf" launch --job "$work/plan/dtf.toml" --profile "$work/plan/big.toml" \
    --dry-run --json > "$work/plan/plan.json"
  t1=$(date +%s%N)
  times+=("$(( (t1 - t0) / 1000 ))")
done
plan_bytes=$(stat -c %s "$work/plan/plan.json")
log "dtf launch --dry-run --json, $hosts hosts: ${times[*]} us"

# 3. doctor against many sshd servers.
log "dtf doctor against $doctor_hosts sshd servers"
bash "$repo/tests/scale/doctor_100.sh" "$dtf" "$work/doctor" "$doctor_hosts" |
  tee "$work/doctor.out" >&2

export work hosts plan_bytes doctor_hosts
python3 - "${times[@]}" <<'PY'
import json, os, re, statistics, sys
work = os.environ["work"]
plan = sorted(int(t) / 1e6 for t in sys.argv[1:])
fig = json.load(open(f"{work}/cluster/figures.json"))
doctor = re.search(r"doctor: (\d+) hosts in ([0-9.]+) s", open(f"{work}/doctor.out").read())
fig["plan"] = {"hosts": int(os.environ["hosts"]), "best_seconds": plan[0],
               "median_seconds": statistics.median(plan),
               "json_bytes": int(os.environ["plan_bytes"]), "goal_seconds": 1.0}
fig["doctor"] = {"hosts": int(doctor.group(1)), "seconds": float(doctor.group(2)),
                 "all_ready": True} if doctor else None
fig["load_average"] = open("/proc/loadavg").read().split()[:3]
json.dump(fig, open(f"{work}/results.json", "w"), indent=1)
print()
print(open(f"{work}/cluster/figures.txt").read().rstrip())
p = fig["plan"]
print(f"dtf launch --dry-run --json, {p['hosts']} hosts: best {p['best_seconds']:.3f} s, "
      f"median {p['median_seconds']:.3f} s ({p['json_bytes'] / 1e6:.1f} MB of JSON); "
      f"goal < 1 s: {'met' if p['median_seconds'] < 1 else 'NOT met'}")
if fig["doctor"]:
    print(f"dtf doctor: all {fig['doctor']['hosts']} hosts ready in {fig['doctor']['seconds']:.1f} s")
print(f"load average at the end: {' '.join(fig['load_average'])}")
PY
