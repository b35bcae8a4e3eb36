#!/usr/bin/env bash
# dtf launch --profile slurm against a real single-node Slurm
# (tests/testing/slurm_cluster.sh, started once for every case):
#   1. --dry-run --json twice gives the same bytes, with the batch script;
#      dtf doctor passes the profile and names a partition Slurm lacks
#   2. the census wide & deep job, 1 PS + 2 workers, submitted with sbatch
#      and followed in the foreground: exits 0, accuracy >= 0.85, every
#      task's exit.json says exited, tasks.json records the Slurm job; then
#      squeue is empty and no process of the run is left; then the same
#      job with mode = "allreduce" on CPUs (Gloo): accuracy >= 0.85
#   3. a detached run stopped with `dtf stop`: scancel, squeue empty, every
#      task recorded stopped; the same after its supervisor was killed
#   4. a task binary that does not exist on the node: the launch fails
#      naming a task and quoting Slurm's srun error; a worker killed mid-run
#      ends the step (--kill-on-bad-exit) and the error names it
#   5. inside an allocation (salloc): the run is a job step of it, no second
#      job (squeue never shows more than one)
# Usage: slurm_launch_test.sh DTF SOURCE_DIR SHARED_DIR WORK_DIR
# Exit 77 (skipped) where the cluster cannot be had.
set -uo pipefail
dtf="$(realpath "$1")"
src="$2"
shared="$(realpath "$3")"
work="$(realpath -m "$4")"
source "$src/tests/launch/slurm/slurm_census.sh"

cat >"$work/census/profiles/slurm.toml" <<TOML
backend = "slurm"
ps = 1
workers = 2

[slurm]
nodes = 1
time_limit = "00:20:00"
base_port = $port
TOML
launch() { "$dtf" launch --job "$job" --profile slurm "$@"; }
jobs_in_queue() { squeue -h | wc -l; }
no_processes() {  # no_processes RUN_ID
  local left
  left="$(pgrep -a -f -- "--run-id $1" || true)"
  [[ -z "$left" ]] || fail "processes of run $1 left: $left"
}

# --- 1. dry run ---------------------------------------------------------------
a="$(launch --dry-run --json)" || fail "dry run"
b="$(launch --dry-run --json)" || fail "dry run"
[[ "$a" == "$b" ]] || fail "--dry-run --json differs between two calls"
grep -q '"batch_script": "#!/bin/bash\\n#SBATCH --job-name=dtf-<run-id>' <<<"$a" ||
  fail "dry run JSON without the batch script: $a"
launch --dry-run | grep -q "srun" || fail "dry run text without srun"
echo "ok: dry run stable, with the batch script"

# --- 1b. dtf doctor ------------------------------------------------------------
"$dtf" doctor --job "$job" --profile slurm >"$work/doctor.out" 2>&1 ||
  { cat "$work/doctor.out"; fail "dtf doctor on a good profile"; }
grep -q "cannot be checked from one node" "$work/doctor.out" ||
  fail "doctor does not say shared storage is unchecked: $(cat "$work/doctor.out")"
printf 'backend = "slurm"\n[slurm]\npartition = "nope"\nnodes = 9\n' \
  >"$work/census/profiles/bad.toml"
if "$dtf" doctor --job "$job" --profile bad >"$work/doctor.out" 2>&1; then
  fail "dtf doctor passed a partition Slurm does not have"
fi
grep -q 'bad.toml:3:13: slurm.partition = "nope": Slurm has no such partition' \
  "$work/doctor.out" || fail "doctor: $(cat "$work/doctor.out")"
echo "ok: dtf doctor checks sinfo's partitions"

# --- 2. a run to its end --------------------------------------------------------
start=$SECONDS
launch --set train.epochs=6 --metrics-out "$work/metrics.json" \
  >"$work/run1.out" 2>"$work/run1.err" || {
  show "$work/run1.err" "$runs"/*/slurm-*.err "$runs"/*/*/stderr
  fail "launch exited $?"
}
id="$(ls "$runs" | head -1)"
run="$runs/$id"
echo "ok: run $id succeeded in $((SECONDS - start)) s"
grep -q "submitted Slurm job" "$work/run1.err" || fail "no submission note"
acc="$(json "$work/metrics.json" 'j["accuracy"]')"
"$py" -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 0.85 else 1)' "$acc" ||
  fail "accuracy $acc < 0.85"
echo "ok: accuracy $acc"
[[ "$(json "$run/tasks.json" 'j["state"]')" == succeeded ]] ||
  fail "tasks.json: $(cat "$run/tasks.json")"
slurm_job="$(json "$run/tasks.json" 'j["slurm_job"]')"
[[ "$slurm_job" =~ ^[0-9]+$ ]] || fail "tasks.json slurm_job: $slurm_job"
# The job ended on its own once every task had exited: not cancelled.
scontrol show job "$slurm_job" | grep -q "JobState=COMPLETED" ||
  fail "job $slurm_job: $(scontrol show job "$slurm_job" | grep -o 'JobState=[A-Z_]*')"
for t in ps-0 worker-0 worker-1; do
  [[ "$(json "$run/$t/exit.json" 'j["state"]')" == exited ]] ||
    fail "$t: $(cat "$run/$t/exit.json")"
done
[[ -x "$run/sbatch.sh" ]] || fail "no $run/sbatch.sh"
[[ "$(stat -c %a "$run/secret")" == 600 ]] || fail "secret mode"
# Mutual TLS (on by default): certificates that name their tasks (and no
# host, so the run above could only succeed with every client checking the
# task it called), keys 0600.
[[ "$(json "$run/plan.json" 'j["tls"]')" == True ]] || fail "plan.json: tls off"
[[ "$(stat -c %a "$run/tls")" == 700 ]] || fail "tls/ mode"
for t in ps-0 worker-0 worker-1; do
  [[ "$(stat -c %a "$run/tls/$t.key")" == 600 ]] || fail "tls/$t.key mode"
  openssl x509 -in "$run/tls/$t.pem" -noout -ext subjectAltName |
    grep -q "DNS:$t" || fail "tls/$t.pem does not name $t"
done
echo "ok: mutual TLS with certificates naming their tasks"
[[ "$(jobs_in_queue)" == 0 ]] || fail "squeue after the run: $(squeue -h)"
no_processes "$id"
"$dtf" status --job "$job" "$id" | grep -q succeeded || fail "dtf status"
"$dtf" logs --job "$job" "$id" worker:0 | grep -q . || fail "dtf logs"
echo "ok: squeue empty, no process left, status and logs read the run"

# --- 2b. allreduce on CPUs ----------------------------------------------------------
# No parameter server: the two workers, job steps of one Slurm job, meet
# through the chief and average over the TLS ring (a Slurm run is always
# mutual TLS, and Gloo's TCP ring has no TLS).
launch --set train.mode=allreduce --set train.device=cpu --set train.epochs=6 \
  --metrics-out "$work/allreduce.json" >"$work/ar.out" 2>"$work/ar.err" || {
  show "$work/ar.err" "$runs"/*/slurm-*.err
  fail "allreduce launch exited $?"
}
ar_id="$(ls "$runs" | sort | tail -n 1)"
[[ ! -e "$runs/$ar_id/ps-0" ]] || fail "allreduce: the plan has a parameter server"
grep -q "worker:1: joined the TLS ring collective as rank 1 of 2" "$work/ar.out" "$work/ar.err" ||
  { show "$work/ar.out" "$work/ar.err"; fail "allreduce: worker:1 did not join the TLS ring"; }
acc="$(json "$work/allreduce.json" 'j["accuracy"]')"
"$py" -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 0.85 else 1)' "$acc" ||
  fail "allreduce accuracy $acc < 0.85"
[[ "$(jobs_in_queue)" == 0 ]] || fail "squeue after the allreduce run: $(squeue -h)"
no_processes "$ar_id"
echo "ok: allreduce on CPUs under Slurm, accuracy $acc"

# --- 3. dtf stop ------------------------------------------------------------------
id="$(launch --detach --set train.steps=1000000 2>"$work/run2.err")" ||
  { show "$work/run2.err"; fail "detached launch"; }
run="$runs/$id"
deadline=$((SECONDS + 120))
until [[ -s "$run/worker-1/ready" && -s "$run/ps-0/ready" && -s "$run/worker-0/ready" ]]; do
  ((SECONDS < deadline)) || { show "$run/supervisor.log" "$run"/*/stderr; fail "run $id not ready"; }
  sleep 0.3
done
[[ "$(jobs_in_queue)" == 1 ]] || fail "squeue while running: $(squeue -h)"
"$dtf" status --job "$job" "$id" | grep -q running || fail "status: $("$dtf" status --job "$job" "$id")"
"$dtf" stop --job "$job" "$id" >"$work/stop.out" 2>&1 || { cat "$work/stop.out"; fail "dtf stop"; }
deadline=$((SECONDS + 60))
until [[ "$(jobs_in_queue)" == 0 ]]; do
  ((SECONDS < deadline)) || fail "squeue after dtf stop: $(squeue -h)"
  sleep 0.3
done
[[ "$(json "$run/tasks.json" 'j["state"]')" == stopped ]] ||
  fail "tasks.json after stop: $(cat "$run/tasks.json")"
for t in ps-0 worker-0 worker-1; do
  s="$(json "$run/$t/exit.json" 'j["state"]')"
  [[ "$s" == stopped || ("$t" == ps-0 && "$s" == exited) ]] ||
    fail "$t after dtf stop: $(cat "$run/$t/exit.json")"
done
no_processes "$id"
echo "ok: dtf stop cancels the job, tasks stopped, nothing left"

# The same once the run's supervisor is gone: dtf stop runs scancel itself.
id="$(launch --detach --set train.steps=1000000 2>"$work/run2b.err")" ||
  { show "$work/run2b.err"; fail "detached launch"; }
run="$runs/$id"
deadline=$((SECONDS + 120))
until [[ -s "$run/worker-1/ready" && -s "$run/ps-0/ready" && -s "$run/worker-0/ready" ]]; do
  ((SECONDS < deadline)) || fail "run $id not ready"
  sleep 0.3
done
kill -KILL "$(json "$run/tasks.json" 'j["supervisor"]["pid"]')"
sleep 0.5
[[ "$(jobs_in_queue)" == 1 ]] || fail "the job did not outlive its supervisor: $(squeue -h)"
"$dtf" stop --job "$job" "$id" >"$work/stop2.out" 2>&1 || { cat "$work/stop2.out"; fail "dtf stop without a supervisor"; }
[[ "$(jobs_in_queue)" == 0 ]] || fail "squeue after dtf stop: $(squeue -h)"
[[ "$(json "$run/tasks.json" 'j["state"]')" == stopped ]] ||
  fail "tasks.json after stop without a supervisor: $(cat "$run/tasks.json")"
no_processes "$id"
echo "ok: dtf stop without the supervisor: $(cat "$work/stop2.out")"

# --- 4. a task that cannot start -------------------------------------------------
if launch --task-binary /nonexistent/bin/dtf >"$work/run3.out" 2>"$work/run3.err"; then
  fail "a launch with a missing task binary succeeded"
fi
grep -q "task ps:0" "$work/run3.err" || { cat "$work/run3.err"; fail "error names no task"; }
grep -q "/nonexistent/bin/dtf" "$work/run3.err" || { cat "$work/run3.err"; fail "error does not quote srun"; }
[[ "$(jobs_in_queue)" == 0 ]] || fail "squeue after the failed launch: $(squeue -h)"
echo "ok: a missing task binary: $(grep -m1 "task ps:0" "$work/run3.err")"

# sbatch refusing the job: its error is the launch's.
start=$SECONDS
if "$dtf" launch --job "$job" --profile bad >"$work/run3b.out" 2>"$work/run3b.err"; then
  fail "a launch on a partition Slurm does not have succeeded"
fi
grep -q "sbatch exited with status 1: " "$work/run3b.err" &&
  grep -q "invalid partition specified: nope" "$work/run3b.err" ||
  { cat "$work/run3b.err"; fail "sbatch's error not shown"; }
((SECONDS - start < 10)) || fail "a refused submission took $((SECONDS - start)) s"
echo "ok: sbatch's refusal: $(grep -m1 "error: run" "$work/run3b.err")"

# --- 4b. a worker that dies mid-run ----------------------------------------------
launch --set train.steps=1000000 >"$work/run5.out" 2>"$work/run5.err" &
launcher=$!
deadline=$((SECONDS + 120))
id=""
until [[ -n "$id" && -s "$runs/$id/worker-1/ready" ]]; do
  ((SECONDS < deadline)) || { kill "$launcher"; fail "run 5 not ready"; }
  sleep 0.3
  id="$(ls -t "$runs" | head -1)"
done
sleep 1
pkill -KILL -f -- "serve .*--role worker --index 1 .*--run-id $id" ||
  fail "no worker:1 serve process of run $id"
wait "$launcher" && fail "a run whose worker was killed succeeded"
grep -q "error: task worker:1 killed by SIGKILL on .*; Slurm ends the job step when a task fails" "$work/run5.err" ||
  { cat "$work/run5.err"; fail "the error does not name worker:1"; }
[[ "$(jobs_in_queue)" == 0 ]] || fail "squeue after the failed run: $(squeue -h)"
no_processes "$id"
echo "ok: a killed worker: $(grep -m1 "error: task worker:1" "$work/run5.err")"

# --- 5. inside an allocation ------------------------------------------------------
before="$(ls "$runs")"
salloc -n 3 --time=10 "$dtf" launch --job "$job" --profile slurm \
  --set train.steps=150 >"$work/run4.out" 2>"$work/run4.err" &
alloc=$!
most=0
while kill -0 "$alloc" 2>/dev/null; do
  n="$(jobs_in_queue)"
  ((n > most)) && most=$n
  sleep 0.2
done
wait "$alloc" || { show "$work/run4.err"; fail "launch inside salloc exited $?"; }
id="$(comm -13 <(echo "$before") <(ls "$runs"))"
run="$runs/$id"
((most == 1)) || fail "squeue showed $most jobs during the run in the allocation"
grep -q "inside Slurm allocation" "$work/run4.err" || fail "no allocation note: $(cat "$work/run4.err")"
step="$(json "$run/tasks.json" 'j["slurm_job"]')"
[[ "$step" =~ ^[0-9]+\.[0-9]+$ ]] || fail "tasks.json slurm_job inside the allocation: $step"
[[ "$(json "$run/tasks.json" 'j["state"]')" == succeeded ]] || fail "$(cat "$run/tasks.json")"
ls "$run"/slurm-*.out >/dev/null 2>&1 && fail "a batch job's output inside the allocation"
no_processes "$id"
echo "ok: inside allocation: step $step, one job in squeue"
echo "PASS"
