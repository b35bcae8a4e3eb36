#!/usr/bin/env bash
# bench/elastic/run.sh [--dtf PATH] [--work DIR] [--modes sync,async]
#                      [--workers N] [--worker-cores C] [--ps-cores C]
#                      [--repeats N] [--wait-idle S]
#
# Elastic workers: the census job (examples/census at batch 32, long enough
# to outlast the measurement) on the local backend with 1 parameter server
# and N workers (default 4), `min_workers = 1`, no restarts; each task's
# process in a CPU cgroup of its own with a quota (a worker 0.3 cores, the
# PS 0.4: hosts with their own cores, not tasks sharing this machine's).
# In each repeat, examples/s over a window, worker:N-1 killed and left out,
# examples/s over a second window once the run steps again: the ratio
# against the lost worker's share, (N-1)/N (bench/elastic/measure.py).
# Prints a table per mode and writes WORK/<mode>/results.json.
#
# Builds dtf (scripts/build.sh dtf) unless --dtf is given. Needs root (the
# cgroups). Stops every run it started and removes its cgroups on exit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dtf=""
work=""
modes="sync,async"
workers=4
worker_cores=0.3
ps_cores=0.4
repeats=3
wait_idle_s=0
usage() { sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || usage
  case "$1" in
    --dtf) dtf="$2" ;;
    --work) work="$2" ;;
    --modes) modes="$2" ;;
    --workers) workers="$2" ;;
    --worker-cores) worker_cores="$2" ;;
    --ps-cores) ps_cores="$2" ;;
    --repeats) repeats="$2" ;;
    --wait-idle) wait_idle_s="$2" ;;
    *) usage ;;
  esac
  shift 2
done
log() { echo "elastic: $*" >&2; }
# shellcheck source=bench/idle.sh
source "$repo/bench/idle.sh"
if [[ -z "$dtf" ]]; then
  (cd "$repo" && nice -n 19 scripts/build.sh dtf > /dev/null)
  dtf="$repo/build/cmd/dtf"
fi
dtf="$(realpath "$dtf")"
work="$(realpath -m "${work:-$repo/build/bench-elastic}")"
shared="$(realpath "$repo/../shared")"
[[ -d "$shared/data/adult" ]] || shared=/work/shared
rm -rf "$work"
mkdir -p "$work/job/profiles"
job="$work/job/dtf.toml"
sed -e "s#\.\./\.\./\.\./shared#$shared#g" \
  -e 's/^batch_size = 256$/batch_size = 32/' \
  -e 's/^epochs = 10$/epochs = 400\nlog_every_steps = 20\nheartbeat_timeout = 3\ncheckpoint_every_steps = 0/' \
  "$repo/examples/census/dtf.toml" > "$job"
grep -q '^log_every_steps = 20$' "$job" || {
  echo "run.sh: examples/census/dtf.toml changed; update the edits above" >&2
  exit 1
}
(cd "$work/job" && "$dtf" gen-records --job "$job" > /dev/null)
cat > "$work/job/profiles/elastic.toml" <<TOML
backend = "local"
ps = 1
workers = $workers
threads = 1
min_workers = 1
TOML
log "cores busy before: $(wait_idle "$wait_idle_s")"
IFS=, read -r -a mode_list <<< "$modes"
for mode in "${mode_list[@]}"; do
  mkdir -p "$work/$mode"
  echo "== $mode"
  /usr/bin/python3 "$here/measure.py" --dtf "$dtf" --job-dir "$work/job" \
    --work "$work/$mode" --mode "$mode" --workers "$workers" \
    --worker-cores "$worker_cores" --ps-cores "$ps_cores" --repeats "$repeats"
done
