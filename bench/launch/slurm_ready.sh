#!/usr/bin/env bash
# bench/launch/slurm_ready.sh [--dtf PATH] [--work DIR] [--repeats N]
#
# On a real single-node Slurm (tests/testing/slurm_cluster.sh, started here
# and stopped at the end): the wall time from `dtf launch --profile slurm
# --detach` (the run directory written, the batch script submitted with
# sbatch) to every task's ready file on the shared run directory, for the
# census job with 1 parameter server and 2 workers; beside it, in the same
# cluster, `srun -n 3 true`. Median of N (default 5) of each; prints both
# and writes WORK/results.json.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dtf="$repo/build/cmd/dtf"
work="/tmp/dtf-bench-slurm"
repeats=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dtf) dtf="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    *) echo "usage: $0 [--dtf PATH] [--work DIR] [--repeats N]" >&2; exit 2 ;;
  esac
done
dtf="$(realpath "$dtf")"
shared="${DTF_SHARED_DIR:-/work/shared}"
cluster="$repo/tests/testing/slurm_cluster.sh"
rm -rf "$work"
mkdir -p "$work/census/profiles"
slurm_dir="$(mktemp -d /tmp/dtf-bench-slurm-cluster.XXXXXX)"
eval "$(bash "$cluster" start "$slurm_dir")"
trap 'bash "$cluster" stop "$slurm_dir"' EXIT

job="$work/census/dtf.toml"
sed "s#\.\./\.\./\.\./shared#$shared#g" "$repo/examples/census/dtf.toml" >"$job"
(cd "$work/census" && "$dtf" gen-records --job "$job" >/dev/null)
cat >"$work/census/profiles/slurm.toml" <<TOML
backend = "slurm"
ps = 1
workers = 2

[slurm]
nodes = 1
base_port = $((20000 + RANDOM % 20000))
TOML
runs="$work/census/.dtf/runs"
now() { date +%s.%N; }
median() { python3 -c 'import statistics,sys; print(f"{statistics.median(map(float, sys.argv[1:])):.2f}")' "$@"; }

ready=()
for ((i = 0; i < repeats; i++)); do
  t0="$(now)"
  id="$("$dtf" launch --job "$job" --profile slurm --detach \
    --set train.steps=100000000 2>/dev/null)"
  until [[ -s "$runs/$id/ps-0/ready" && -s "$runs/$id/worker-0/ready" &&
    -s "$runs/$id/worker-1/ready" ]]; do
    sleep 0.02
  done
  t1="$(now)"
  ready+=("$(python3 -c "print($t1 - $t0)")")
  "$dtf" stop --job "$job" "$id" >/dev/null
  until [[ -z "$(squeue -h)" ]]; do sleep 0.1; done
done
srun_s=()
for ((i = 0; i < repeats; i++)); do
  t0="$(now)"
  srun -n 3 true
  t1="$(now)"
  srun_s+=("$(python3 -c "print($t1 - $t0)")")
done
r="$(median "${ready[@]}")"
s="$(median "${srun_s[@]}")"
printf 'submission to all 3 tasks ready: %s s (median of %d: %s)\n' "$r" "$repeats" "${ready[*]}"
printf 'srun -n 3 true:                  %s s (median of %d: %s)\n' "$s" "$repeats" "${srun_s[*]}"
printf '{"ready_s": %s, "srun_true_s": %s, "repeats": %d}\n' "$r" "$s" "$repeats" >"$work/results.json"
