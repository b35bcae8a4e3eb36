#!/usr/bin/env bash
# recovery_k8s_test.sh DTF SOURCE_DIR BUILD_DIR SHARED_DIR
#
# A Kubernetes training run that loses a pod: the census job
# (examples/census, data SHARED_DIR/data/adult on a hostPath volume,
# records made by each pod's gen-records init container) applied with
# `dtf launch --profile k8s` (ps = 1, workers = 2, max_restarts = 1, the
# output volume a hostPath of this test) against process_cluster.py as
# kubectl, whose pods run as local processes:
#   1. the chief writes a checkpoint on the output volume's node path
#   2. worker 1's pod is killed (SIGKILL to its process group): Failed
#   3. the Job replaces it (the stand-in's reconcile, at each `kubectl
#      get`); the replacement's dtf serve --restore goes on from the run's
#      checkpoint ("worker:1: resuming at global step ...")
#   4. the Job completes once the chief's index succeeded (the killed pod
#      Failed, its replacement Succeeded or stopped by the controller),
#      the chief's last evaluation at an accuracy of 0.85 or more, the
#      model and the checkpoint on the output volume
#   5. `dtf stop <run id>` leaves no pod process and no object.
# Exit 77 (skipped) without the venv (PyYAML) or the data.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/process_cluster_env.sh"
process_cluster_start "$@" data/adult/adult.data dtf_k8s_recovery

start="$(date +%s.%N)"
# The job's data paths (../../../shared/data/adult/...) land in the data
# volume's mount from the pods' job directory, and so does the output
# directory (../../../out/census) in the output volume's.
census_run 'ps = 1' 'workers = 2' 'threads = 1' 'max_restarts = 1'

# --- the run -------------------------------------------------------------------
# 60 epochs of about 128 global steps, a checkpoint every 20 steps: the
# first checkpoint comes early, the end long after worker 1 is killed.
launch_run --set train.epochs=60 --set train.checkpoint_every_steps=20
grep -q "dtf: run $id applied" "$work/launch.err" \
  || fail "launch did not say the run was applied: $(cat "$work/launch.err")"
if grep -q "lost with its pods" "$work/launch.err"; then
  fail "the output is on the output volume, yet launch warns: $(cat "$work/launch.err")"
fi
grep -q -- '- "--restore"$' "$job/.dtf/runs/$id/kubernetes/job.yaml" \
  || fail "the pods do not run dtf serve --restore"
grep -q 'backoffLimitPerIndex: 1$' "$job/.dtf/runs/$id/kubernetes/job.yaml" \
  || fail "the Job does not replace a failed pod once"
echo "ok: run $id applied ($(elapsed "$start") s)"

# --- 1. a checkpoint on the output volume ---------------------------------------
wait_checkpoint "$out/census/checkpoint.dtf"
pods >"$work/pods"
chief="$(awk '$2 == 1 {print $1}' "$work/pods")"
worker1="$(awk '$2 == 2 {print $1}' "$work/pods")"
[[ -n "$chief" && -n "$worker1" ]] || die "no pod for index 1 or 2"
grep -q "$worker1 2 Running" "$work/pods" || die "worker 1's pod is not running"
# Worker 1's first start ran with --restore: it found no checkpoint of the
# run (or, started late on a loaded machine, the chief's first one).
grep -Eq 'worker:1: (no checkpoint at .*; reading the input from the start|resuming at global step)' \
  "$(log_of "$worker1")" || die "worker 1's first start: no note of --restore"
echo "ok: checkpoint on the output volume ($(elapsed "$start") s)"

# --- 2. worker 1's pod killed ----------------------------------------------------
kill_pod "$worker1"
killed_at="$(date +%s.%N)"
echo "ok: killed $worker1 at $(elapsed "$start") s"

# --- 3. replaced; the replacement goes on from the checkpoint ---------------------
deadline=$((SECONDS + 120))
while :; do
  pods >"$work/pods"
  grep -q "^$worker1 2 Failed$" "$work/pods" || die "the killed pod is not Failed"
  replacement="$(awk -v old="$worker1" '$2 == 2 && $1 != old {print $1}' "$work/pods")"
  [[ -n "$replacement" ]] && break
  ((SECONDS < deadline)) || die "worker 1's pod not replaced in 120 s"
  sleep 1
done
echo "ok: $replacement replaces $worker1 ($(elapsed "$killed_at") s after the kill)"
deadline=$((SECONDS + 180))
until grep -q 'worker:1: resuming at global step' "$(log_of "$replacement")" 2>/dev/null; do
  ((SECONDS < deadline)) || die "the replacement did not resume from the checkpoint"
  pods >/dev/null
  sleep 1
done
resumed="$(grep -m1 'worker:1: resuming at global step' "$(log_of "$replacement")")"
grep -q "(its recorded position; .*census/checkpoint.dtf)" <<<"$resumed" \
  || die "the replacement resumed from elsewhere: $resumed"
resumed_step="$(sed 's/.*resuming at global step \([0-9]*\),.*/\1/' <<<"$resumed")"
resumed_epoch="$(sed 's/.*, epoch \([0-9]*\),.*/\1/' <<<"$resumed")"
((resumed_step > 0)) || die "resumed at global step $resumed_step"
echo "ok: $resumed"

# --- 4. the Job completes ---------------------------------------------------------
wait_job Complete 480
echo "ok: the Job completed ($(elapsed "$start") s)"
pods | sort -k2,2 -k1,1 >"$work/pods"
cat "$work/pods"
# The chief's index succeeded, which completes the Job; the killed pod
# failed; its replacement succeeded, or was still finishing its last steps
# when the chief was done and the Job's controller stopped and removed it.
[[ "$(awk '$2 == 1 {print $3}' "$work/pods")" == Succeeded ]] \
  || die "the chief's pod: $(tr '\n' ';' <"$work/pods")"
grep -q "^$worker1 2 Failed$" "$work/pods" || die "$worker1 is not the failed one"
replaced="$(awk -v p="$replacement" '$1 == p {print $3}' "$work/pods")"
[[ -z "$replaced" || "$replaced" == Succeeded ]] \
  || die "$replacement ended $replaced"
# The PS pod ended with the run (exit 0), or the Job's controller stopped
# and removed it once the workers had succeeded.
ps_pods="$(awk '$2 == 0 {print $3}' "$work/pods")"
[[ -z "$ps_pods" || "$ps_pods" == Succeeded ]] \
  || die "the PS pods after the Job completed: $ps_pods"
accuracy="$(sed -n 's/.*global step [0-9]*; .*accuracy \([0-9.]*\).*/\1/p' \
  "$(log_of "$chief")" | tail -1)"
[[ -n "$accuracy" ]] || die "no evaluation in the chief's log"
at_least "$accuracy" 0.85 "the chief's final accuracy"
# The replacement read on from the checkpoint's epoch, not from the first,
# and trained to the end of the run: the kill came in mid-run. Its log is
# read where its pod is left: one the Job's controller removed when the
# chief was done (above) took its log with it, and its resume was checked
# from the log while it ran.
if [[ -n "$replaced" ]]; then
  first_epoch="$(sed -n 's/^step *[0-9]* *epoch *\([0-9]*\) .*/\1/p' \
    "$(log_of "$replacement")" | head -1)"
  [[ -n "$first_epoch" ]] || die "no progress in the replacement's log"
  ((first_epoch >= resumed_epoch)) \
    || die "the replacement trained epoch $first_epoch first, not from epoch $resumed_epoch on"
  grep -q '^worker:1: [0-9]* examples in ' "$(log_of "$replacement")" \
    || die "the replacement did not finish its input"
  echo "ok: the replacement trained from epoch $first_epoch"
fi
final_step="$(sed -n 's/.*global step \([0-9]*\); .*accuracy.*/\1/p' \
  "$(log_of "$chief")" | tail -1)"
((resumed_step < final_step / 2)) \
  || die "the kill came late: resumed at step $resumed_step of $final_step"
echo "ok: the run ended at global step $final_step"
for f in census/model/model.toml census/checkpoint.dtf; do
  [[ -s "$out/$f" ]] || die "no $f on the output volume"
done
echo "ok: the model and the checkpoint on the output volume"

# --- 5. dtf stop ------------------------------------------------------------------
stop_run
echo "PASS: recovery_k8s ($(elapsed "$start") s)"
