#!/usr/bin/env bash
# resume_k8s_test.sh DTF SOURCE_DIR BUILD_DIR SHARED_DIR
#
# dtf launch --resume of a Kubernetes training run: the census job
# (ps = 1, workers = 2, the output volume a hostPath of this test) applied
# against process_cluster.py as kubectl, whose pods run as local processes:
#   1. --resume of the run while its Job is active is refused
#   2. once a checkpoint is on the output volume, `dtf stop` deletes the
#      run's objects (its pods stop)
#   3. `dtf launch --resume <run id> --ps 3` is refused; `dtf launch
#      --resume <run id>` applies the recorded objects again
#      under the same run id; the new pods restore the run's checkpoint
#      ("worker:0: resuming at global step N", N > 0) and the Job
#      completes with the chief's last accuracy >= 0.85
#   4. --resume of the run that succeeded is refused; dtf stop leaves no
#      pod process and no object.
# Exit 77 (skipped) without the venv (PyYAML) or the data.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/process_cluster_env.sh"
process_cluster_start "$@" data/adult/adult.data dtf_k8s_resume

start="$(date +%s.%N)"
census_run 'ps = 1' 'workers = 2' 'threads = 1'

resume() { (cd "$job" && "$dtf" launch --resume "$id"); }

# --- the run -------------------------------------------------------------------
launch_run --set train.epochs=24 --set train.checkpoint_every_steps=20
echo "ok: run $id applied ($(elapsed "$start") s)"

# --- 1. a run still going is not resumed -----------------------------------------
if resume >"$work/early.out" 2>"$work/early.err"; then
  die "--resume of an active run succeeded"
fi
grep -q "run $id is still going" "$work/early.err" ||
  die "--resume of an active run: $(cat "$work/early.err")"
echo "ok: --resume of the active run refused"

# --- 2. a checkpoint, then dtf stop -------------------------------------------------
wait_checkpoint "$out/census/checkpoint.dtf"
(cd "$job" && "$dtf" stop "$id" >"$work/stop1.out" 2>&1) ||
  { cat "$work/stop1.out" >&2; fail "dtf stop $id failed"; }
no_pod_processes 15
[[ -z "$(pods)" ]] || die "pods left after dtf stop: $(pods)"
echo "ok: stopped after a checkpoint ($(elapsed "$start") s)"

# --- 3. dtf launch --resume ----------------------------------------------------------
# Not with another number of parameter servers: the recorded objects are
# applied as they were, so --ps is refused rather than dropped.
if (cd "$job" && "$dtf" launch --resume "$id" --ps 3 --dry-run) \
    >"$work/ps3.out" 2>"$work/ps3.err"; then
  die "--resume --ps 3 of a Kubernetes run succeeded"
fi
grep -q "\-\-ps with --resume: not for a run handed to an engine" "$work/ps3.err" ||
  die "--resume --ps 3: $(cat "$work/ps3.err")"
resume >"$work/resume.out" 2>"$work/resume.err" || die "dtf launch --resume $id failed"
[[ "$(cat "$work/resume.out")" == "$id" ]] || die "--resume printed $(cat "$work/resume.out")"
grep -q "dtf: run $id resumed: its objects applied again" "$work/resume.err" ||
  die "no resume note: $(cat "$work/resume.err")"
wait_job Complete 480
pods >"$work/pods"
chief="$(awk '$2 == 1 {print $1}' "$work/pods")"
[[ -n "$chief" ]] || die "no pod for index 1 (the chief)"
# The Job completes with the chief: worker:1's pod, when it was still
# finishing its last steps then, was stopped and removed by the Job's
# controller. The chief's own restore shows the resume.
resumed="$(grep -m1 'worker:0: resuming at global step' "$(log_of "$chief")" || true)"
[[ -n "$resumed" ]] || die "worker:0 of the resumed run did not restore"
step="$(sed 's/.*resuming at global step \([0-9]*\),.*/\1/' <<<"$resumed")"
((step > 0)) || die "resumed at global step $step"
accuracy="$(sed -n 's/.*global step [0-9]*; .*accuracy \([0-9.]*\).*/\1/p' \
  "$(log_of "$chief")" | tail -1)"
[[ -n "$accuracy" ]] || die "no evaluation in the chief's log"
at_least "$accuracy" 0.85 "the chief's final accuracy"
echo "ok: resumed at global step $step, completed at accuracy $accuracy ($(elapsed "$start") s)"

# --- 4. nothing to resume; dtf stop -------------------------------------------------
if resume >"$work/again.out" 2>"$work/again.err"; then
  die "--resume of a run that succeeded succeeded"
fi
grep -q "run $id finished (succeeded); there is nothing to resume" "$work/again.err" ||
  die "--resume of a finished run: $(cat "$work/again.err")"
(cd "$job" && "$dtf" stop "$id" >"$work/stop2.out" 2>&1) ||
  { cat "$work/stop2.out" >&2; fail "dtf stop $id failed"; }
no_pod_processes 15
[[ -z "$(ls "$cluster/pods")" ]] || fail "pods left: $(ls "$cluster/pods")"
echo "PASS: resume_k8s ($(elapsed "$start") s)"
