#!/usr/bin/env bash
# elastic_k8s_test.sh DTF SOURCE_DIR BUILD_DIR SHARED_DIR
#
# Elastic workers on Kubernetes: the census job (examples/census) applied
# with `dtf launch --profile k8s` (ps = 1, workers = 3, min_workers = 2,
# max_restarts = 0, the output volume a hostPath of this test) against
# process_cluster.py as kubectl, whose pods run as local processes:
#   1. the Job lets workers - min_workers = 1 index fail for good
#      (maxFailedIndexes: 1) and retries none (backoffLimitPerIndex: 0)
#   2. worker 2's pod is killed (SIGKILL to its process group): its index
#      has failed for good and is not replaced, yet the Job goes on and the
#      chief keeps stepping once the parameter server stops waiting for the
#      lost worker (train.heartbeat_timeout)
#   3. worker 1's pod is killed too: one worker would be left, fewer than
#      min_workers, and the Job fails; its controller stops every pod, and
#      the checkpoint on the output volume reads back whole
#   4. `dtf stop <run id>` leaves no pod process and no object.
# Exit 77 (skipped) without the venv (PyYAML) or the data.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/process_cluster_env.sh"
process_cluster_start "$@" data/adult/adult.data dtf_k8s_elastic

start="$(date +%s.%N)"
census_run 'ps = 1' 'workers = 3' 'threads = 1' 'max_restarts = 0' 'min_workers = 2'

# chief_step: the global step of the chief's last progress line (0: none).
chief_step() {
  local step
  step="$(sed -n 's/^step *\([0-9]*\) .*/\1/p' "$(log_of "$chief")" | tail -1)"
  echo "${step:-0}"
}

# --- the run -------------------------------------------------------------------
# 400 epochs, a checkpoint every 20 steps, the lost worker left out after
# 3 s of silence: the run is far from its end when both kills have come.
launch_run --set train.epochs=400 --set train.checkpoint_every_steps=20 --set train.heartbeat_timeout=3
manifest="$job/.dtf/runs/$id/kubernetes/job.yaml"
grep -q '^  maxFailedIndexes: 1$' "$manifest" \
  || fail "the Job does not let one worker index fail: $(grep -i failed "$manifest")"
grep -q '^  backoffLimitPerIndex: 0$' "$manifest" \
  || fail "the Job retries a failed pod"
echo "ok: run $id applied ($(elapsed "$start") s)"

# --- a checkpoint on the output volume -----------------------------------------
wait_checkpoint "$out/census/checkpoint.dtf"
pods >"$work/pods"
chief="$(awk '$2 == 1 {print $1}' "$work/pods")"
worker1="$(awk '$2 == 2 {print $1}' "$work/pods")"
worker2="$(awk '$2 == 3 {print $1}' "$work/pods")"
[[ -n "$chief" && -n "$worker1" && -n "$worker2" ]] || die "no pod for index 1, 2 or 3"
echo "ok: checkpoint on the output volume ($(elapsed "$start") s)"

# --- 2. worker 2 lost above min_workers: the run goes on without it -------------
kill_pod "$worker2"
killed_at="$(date +%s.%N)"
echo "ok: killed $worker2 at $(elapsed "$start") s"
# The parameter server waits for it heartbeat_timeout (3 s), then steps on.
sleep 8
before="$(chief_step)"
sleep 8
pods >"$work/pods"
after="$(chief_step)"
[[ -z "$(job_condition)" ]] || die "the Job ended $(job_condition) with 2 of 3 workers left"
grep -q "^$worker2 3 Failed$" "$work/pods" || die "the killed pod is not Failed"
[[ "$(awk '$2 == 3' "$work/pods" | wc -l)" -eq 1 ]] \
  || die "index 3 was replaced: $(tr '\n' ';' <"$work/pods")"
((after > before)) \
  || die "the chief did not step without worker 2 (step $before, then $after)"
echo "ok: 2 of 3 workers go on without $worker2: the chief stepped from $before to $after ($(elapsed "$killed_at") s after the kill)"

# --- 3. worker 1 lost too: below min_workers, the Job fails ---------------------
kill_pod "$worker1"
killed_at="$(date +%s.%N)"
wait_job Failed 60
echo "ok: the Job failed $(elapsed "$killed_at") s after the second kill"
pods >/dev/null  # the stand-in's controller stops them
no_pod_processes 30
echo "ok: the Job's controller stopped every pod"
(cd "$job" && "$dtf" status "$id" >"$work/status.out" 2>&1) || true
# The Job Failed, and the two workers' pods killed, each "exit 137".
grep -Eq "^job.batch/dtf-$id +Failed" "$work/status.out" \
  && [[ "$(grep -Ec "^pod/.* +Failed +exit 137" "$work/status.out")" -eq 2 ]] \
  || die "dtf status does not say why the run failed: $(cat "$work/status.out")"
# The checkpoint the chief left reads back whole (magic, CRC-32C, every
# entry: docs/formats/checkpoint.md) and is of this run.
got="$("$python" -c '
import sys
sys.path.insert(0, sys.argv[1])
from checkpoints import read_checkpoint
step, run = read_checkpoint(sys.argv[2])
print(step, run)' "$src/bench/faults" "$out/census/checkpoint.dtf")" \
  || die "the checkpoint left is not whole"
[[ "$got" == *" $id" ]] || die "the checkpoint is of another run: $got"
echo "ok: the checkpoint on the output volume is whole"

# --- 4. dtf stop ------------------------------------------------------------------
stop_run
echo "PASS: elastic_k8s ($(elapsed "$start") s)"
