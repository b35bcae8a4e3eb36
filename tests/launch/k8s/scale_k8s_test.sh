#!/usr/bin/env bash
# scale_k8s_test.sh DTF SOURCE_DIR BUILD_DIR SHARED_DIR
#
# Workers added to a running Kubernetes run: the census job (examples/
# census) applied with `dtf launch --profile k8s` (ps = 1, workers = 2,
# max_workers = 3) against process_cluster.py as kubectl, whose pods run
# as local processes:
#   1. the Job is an elastic Indexed Job of ps + 2 indexes (completions =
#      parallelism = 3) whose pods know the third worker slot's address and
#      are told it is reserved (--started-workers 2)
#   2. `dtf scale RUN --workers 3` patches the Job to 4 indexes; the Job's
#      controller starts worker 2's pod, which joins the run: the worker
#      reading its input shard releases it to it, and it steps
#   3. the run completes (the Job Complete) at an accuracy of 0.85; the run
#      record and the recorded Job say 3 workers (a resume applies them)
#   4. dtf scale past the slots, or below the workers started, is refused;
#      `dtf stop <run id>` leaves no pod process and no object.
# Exit 77 (skipped) without the venv (PyYAML) or the data.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/process_cluster_env.sh"
process_cluster_start "$@" data/adult/adult.data dtf_k8s_scale

start="$(date +%s.%N)"
census_run 'ps = 1' 'workers = 2' 'threads = 1' 'max_workers = 3'

# --- 1. the run: 2 of 3 worker slots ----------------------------------------------
launch_run --set train.epochs=60 --set train.checkpoint_every_steps=50
manifest="$job/.dtf/runs/$id/kubernetes/job.yaml"
grep -q '^  completions: 3$' "$manifest" && grep -q '^  parallelism: 3$' "$manifest" \
  || fail "the Job does not start ps + 2 indexes: $(grep -E 'completions|parallelism' "$manifest")"
grep -q -- '- "--started-workers"' "$manifest" && grep -A1 -- '- "--started-workers"' "$manifest" | grep -q '"2"' \
  || fail "the pods are not told 2 workers start: $(grep -A1 started "$manifest")"
grep -q "dtf-$id-3\.dtf-$id\." "$manifest" \
  || fail "the pods do not know the third worker slot's address"
echo "ok: run $id applied: 3 indexes of 4 slots ($(elapsed "$start") s)"

# The chief steps before the scale.
deadline=$((SECONDS + 300))
chief=""
until [[ -n "$chief" ]] && grep -q '^step ' "$(log_of "$chief")" 2>/dev/null; do
  ((SECONDS < deadline)) || die "the chief never stepped"
  chief="$(pods | awk '$2 == 1 {print $1}')"
  sleep 1
done
[[ "$(pods | wc -l)" -eq 3 ]] || die "not 3 pods before the scale"

# --- 2. dtf scale --------------------------------------------------------------------
(cd "$job" && "$dtf" scale "$id" --workers 3 >"$work/scale.out" 2>&1) \
  || { cat "$work/scale.out" >&2; die "dtf scale $id --workers 3 failed"; }
grep -q "the Job runs 3 of 3 worker slots" "$work/scale.out" \
  || die "dtf scale says: $(cat "$work/scale.out")"
grep -q "patch job dtf-$id --type=merge" "$work/kubectl.log" \
  || die "dtf scale did not patch the Job: $(tail -3 "$work/kubectl.log")"
scaled_at="$(date +%s.%N)"
deadline=$((SECONDS + 120))
worker2=""
until [[ -n "$worker2" ]] && grep -q "first step" "$(log_of "$worker2")" 2>/dev/null; do
  ((SECONDS < deadline)) || die "worker 2's pod did not step within 120 s of the scale"
  worker2="$(pods | awk '$2 == 3 {print $1}')"
  sleep 0.5
done
echo "ok: worker 2's pod $worker2 stepped $(elapsed "$scaled_at") s after dtf scale"

# --- 3. the run completes --------------------------------------------------------------
wait_job Complete 600
grep -q "releases worker:2's input shard to worker:2" "$(log_of "$chief")" \
  || die "no worker released worker 2's input shard to it"
accuracy="$(sed -n 's/^eval .* accuracy \([0-9.]*\) .*/\1/p' "$(log_of "$chief")" | tail -1)"
"$python" -c "import sys; sys.exit(0 if float('$accuracy') >= 0.85 else 1)" \
  || die "accuracy $accuracy < 0.85"
grep -q '"workers_started": 3' "$job/.dtf/runs/$id/kubernetes.json" \
  || die "the run record does not say 3 workers: $(cat "$job/.dtf/runs/$id/kubernetes.json")"
grep -q '^  completions: 4$' "$manifest" && grep -q '^  parallelism: 4$' "$manifest" \
  || die "the recorded Job is not at 4 indexes"
echo "ok: the Job completed, accuracy $accuracy ($(elapsed "$start") s)"

# --- 4. refusals, dtf stop ---------------------------------------------------------------
if (cd "$job" && "$dtf" scale "$id" --workers 4 >"$work/over.out" 2>&1); then
  fail "dtf scale past the slots was not refused"
fi
grep -q -- "--workers 4: run $id has 3 worker slots (max_workers = 3)" "$work/over.out" \
  || fail "dtf scale --workers 4 says: $(cat "$work/over.out")"
if (cd "$job" && "$dtf" scale "$id" --workers 1 >"$work/under.out" 2>&1); then
  fail "dtf scale below the workers started was not refused"
fi
grep -q "has started 3 workers" "$work/under.out" \
  || fail "dtf scale --workers 1 says: $(cat "$work/under.out")"
stop_run
echo "PASS: scale_k8s ($(elapsed "$start") s)"
