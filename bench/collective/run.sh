#!/usr/bin/env bash
# bench/collective/run.sh [--build DIR] [--work DIR] [--ranks N] [--calls N]
#     [--sizes A,B,...] [--wait-idle SECONDS]
#
# dtf's Gloo collective (the allreduce of `mode = "allreduce"` on CPUs):
# allreduce-mean latency (p50, p90) and bandwidth between ranks over
# loopback TCP for a range of sizes (21,049 floats: the census wide & deep
# gradient), first on an otherwise idle machine, then in the same run with
# as many spinning threads as the machine has cores, as a small machine's
# other worker keeps them busy; and idle without a run's stop flag (no
# watch on each call: what the watch costs).
# Writes WORK/idle.json, WORK/idle-no-stop-flag.json and WORK/busy.json.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

build="$repo/build"
work=""
ranks=2
calls=300
sizes="1,1024,21049,262144,4194304"
wait_idle_s=0

usage() {
  sed -n '2,3p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --ranks) ranks="$2"; shift 2 ;;
    --calls) calls="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --wait-idle) wait_idle_s="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done

log() { echo "bench: $*" >&2; }

[[ -n "$work" ]] || work="$build/bench-collective"
mkdir -p "$work"
work="$(realpath "$work")"

# build_bench; wait_idle.
source "$here/../build_bench.sh"
source "$here/../idle.sh"
log "building collective_bench into $build"
build_bench "$repo" "$build" collective_bench >&2
bench="$build/bench/collective_bench"

busy="$(wait_idle "$wait_idle_s")"
log "cores busy before: $busy"
"$bench" --ranks "$ranks" --calls "$calls" --sizes "$sizes" \
  --json "$work/idle.json"
echo
# The same without a run's stop flag: no watch on the calls (its cost).
"$bench" --ranks "$ranks" --calls "$calls" --sizes "$sizes" \
  --stop-flag off --json "$work/idle-no-stop-flag.json"
echo
"$bench" --ranks "$ranks" --calls "$calls" --sizes "$sizes" \
  --busy "$(nproc)" --json "$work/busy.json"
log "results: $work/idle.json, $work/busy.json"
