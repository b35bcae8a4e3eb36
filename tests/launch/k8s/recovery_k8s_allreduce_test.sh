#!/usr/bin/env bash
# recovery_k8s_allreduce_test.sh DTF SOURCE_DIR BUILD_DIR SHARED_DIR
#
# A Kubernetes allreduce run (census on CPUs over Gloo, workers = 2,
# max_restarts = 2, the output volume a hostPath of this test) against
# process_cluster.py as kubectl, whose pods run as local processes, loses
# worker 1's pod mid-run:
#   1. the Job replaces worker 1's pod; the chief fails, naming rank 1
#      (lost in the collective, or another process now), and the Job
#      replaces the chief's pod too (a new worker 1 that reaches the old
#      chief first is refused its rendezvous and waits for the next chief
#      instead of joining the old one's)
#   2. the new chief restores the run's checkpoint from the output volume,
#      the ranks meet again, and the Job completes with an accuracy of 0.85
#   3. `dtf stop <run id>` leaves no pod process and no object.
# Exit 77 (skipped) without the venv (PyYAML) or the data.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/process_cluster_env.sh"
process_cluster_start "$@" data/adult/adult.data dtf_k8s_allreduce

start="$(date +%s.%N)"
census_run 'ps = 1' 'workers = 2' 'threads = 1' 'max_restarts = 2'

# --- the run -------------------------------------------------------------------
launch_run --set train.mode=allreduce --set train.device=cpu --set train.epochs=30 --set train.checkpoint_every_steps=50
echo "ok: run $id applied ($(elapsed "$start") s)"

# --- a checkpoint, then worker 1's pod killed ------------------------------------
wait_checkpoint "$out/census/checkpoint.dtf"
pods >"$work/pods"
chief="$(awk '$2 == 0 {print $1}' "$work/pods")"
worker1="$(awk '$2 == 1 {print $1}' "$work/pods")"
[[ -n "$chief" && -n "$worker1" ]] || die "no pod for index 0 or 1"
kill_pod "$worker1"
killed_at="$(date +%s.%N)"
echo "ok: killed $worker1 at $(elapsed "$start") s"

# --- 1. both pods replaced; 2. the Job completes -----------------------------------
wait_job Complete 400
echo "ok: the Job completed $(elapsed "$killed_at") s after the kill"
pods >"$work/pods"
cat "$work/pods"
# The first chief failed naming the lost rank: in the collective ("peer
# rank 1 lost"), or, its replacement heard first, as another process.
grep -Eq "dtf: error: worker:0: .*(peer rank 1 lost|worker:1 is another process now)" \
  "$(log_of "$chief")" \
  || die "the first chief did not fail naming rank 1: $(grep -m1 'error' "$(log_of "$chief")")"
final="$(awk -v old="$chief" '$2 == 0 && $1 != old && $3 == "Succeeded" {print $1}' "$work/pods")"
[[ -n "$final" ]] || die "no replacement of the chief succeeded"
grep -q "worker:0: restored .*census/checkpoint" "$(log_of "$final")" \
  || die "the replaced chief did not restore the run's checkpoint"
accuracy="$(sed -n 's/.*global step [0-9]*; .*accuracy \([0-9.]*\).*/\1/p' \
  "$(log_of "$final")" | tail -1)"
[[ -n "$accuracy" ]] || die "no evaluation in the last chief's log"
at_least "$accuracy" 0.85 "the last chief's final accuracy"
echo "ok: the replaced chief restored the checkpoint and ended at accuracy $accuracy"

# --- 3. dtf stop ------------------------------------------------------------------
stop_run
echo "PASS: recovery_k8s_allreduce ($(elapsed "$start") s)"
