#!/usr/bin/env bash
# dtf launch --profile spark against a real Spark standalone cluster on
# loopback (one master, two workers of 2 cores: tests/testing/
# spark_cluster.sh, started by the ctest fixture spark_cluster):
#   1. a master that does not answer: a clear error naming it, at once;
#      dtf doctor checks spark-submit and the master; --dry-run --json twice gives the same bytes, with spark-submit's
#      command line and the driver
#   2. the census job, 1 PS + 2 workers (the runtime and the job shipped
#      with --archives): exits 0, accuracy >= 0.85, every task's exit.json
#      says exited, tasks.json names the application; then no dtf process
#      of the run and no executor of the application is left; status and
#      logs read the run; then the same job in allreduce mode (2 workers,
#      Gloo on CPUs): accuracy >= 0.85
#   3. more tasks than the cluster has cores: a clear error, not a stage
#      waiting for ever
#   4. a detached run: worker:1's dtf serve killed mid-run ends the run,
#      naming worker:1; a detached run stopped with dtf stop; a foreground
#      run interrupted with SIGINT (Ctrl-C): each time the application is
#      killed and nothing is left
# Usage: spark_launch_test.sh DTF SOURCE_DIR SHARED_DIR WORK_DIR CLUSTER_DIR
set -uo pipefail
dtf="$(realpath "$1")"
src="$2"
shared="$(realpath "$3")"
work="$(realpath -m "$4")"
cluster_dir="$(realpath "$5")"
py=/usr/bin/python3

fail() { echo "FAIL: $*" >&2; exit 1; }
show() {
  local f
  for f in "$@"; do
    [[ -f "$f" ]] && { echo "--- $f" >&2; tail -n 40 "$f" >&2; }
  done
}
json() {  # json FILE EXPR: a value of a JSON file (EXPR over j)
  "$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
[[ -f "$cluster_dir/env" ]] || fail "no Spark cluster in $cluster_dir (fixture spark_cluster)"
set -a
# shellcheck disable=SC1091
source "$cluster_dir/env"
set +a

rm -rf "$work"
mkdir -p "$work/census/profiles"
job="$work/census/dtf.toml"
# Absolute records and output_dir: the tasks run the shipped job in their
# executors' directories and read and write where the launcher does.
sed -e "s#\.\./\.\./\.\./shared#$shared#g" \
    -e "s#^records = \"records\"#records = \"$work/census/records\"#" \
    -e "s#^output_dir = \"out\"#output_dir = \"$work/census/out\"#" \
    "$src/examples/census/dtf.toml" >"$job"
(cd "$work/census" && "$dtf" gen-records --job "$job" >/dev/null) ||
  fail "gen-records"
profile() {  # profile NAME MASTER [EXTRA [spark] LINES]
  cat >"$work/census/profiles/$1.toml" <<TOML
backend = "spark"
ps = 1
workers = 2

[spark]
master = "$2"
spark_submit = "$SPARK_SUBMIT"
python = "$SPARK_PYTHON"
executor_memory = "512m"
conf = { "spark.driver.host" = "127.0.0.1", "spark.driver.bindAddress" = "127.0.0.1" }
${3:-}
TOML
}
profile spark "$SPARK_MASTER_URL"
runs="$work/census/.dtf/runs"
launch() { "$dtf" launch --job "$job" "$@"; }
app_of() { json "$runs/$1/tasks.json" 'j.get("spark_app", "")'; }
nothing_left() {  # nothing_left RUN_ID: no process of the run, no executor
  local app left deadline=$((SECONDS + 60))
  app="$(app_of "$1")"
  while true; do
    left="$(pgrep -a -f -- "$1" || true)"
    if [[ -n "$app" ]]; then
      left+="$(pgrep -a -f -- "CoarseGrainedExecutorBackend.*$app" || true)"
    fi
    [[ -z "$left" ]] && return 0
    ((SECONDS < deadline)) || fail "left running after run $1: $left"
    sleep 0.5
  done
}
wait_ready() {  # wait_ready RUN_DIR TASK_DIR...
  local run="$1" t deadline=$((SECONDS + 240))
  shift
  for t in "$@"; do
    until [[ -s "$run/$t/ready" ]]; do
      ((SECONDS < deadline)) ||
        { show "$run/supervisor.log" "$run/spark-submit.out" "$run"/*/stderr; fail "$run: $t not ready"; }
      sleep 0.3
    done
  done
}

# --- 1. the master unreachable; the dry run ---------------------------------
closed="$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
profile nomaster "spark://127.0.0.1:$closed"
start=$SECONDS
if launch --profile nomaster >"$work/nomaster.out" 2>&1; then
  fail "a launch to a closed master succeeded"
fi
grep -q "the Spark master spark://127.0.0.1:$closed (.*nomaster.toml:6:10: spark.master) is unreachable" \
  "$work/nomaster.out" || fail "no clear error: $(cat "$work/nomaster.out")"
((SECONDS - start < 30)) || fail "the unreachable master took $((SECONDS - start)) s to report"
echo "ok: an unreachable master: $(grep -o 'the Spark master.*' "$work/nomaster.out")"

out="$("$dtf" doctor --job "$job" --profile spark 2>&1)" || fail "dtf doctor: $out"
grep -q "Spark profile ready" <<<"$out" || fail "dtf doctor: $out"
if out="$("$dtf" doctor --job "$job" --profile nomaster 2>&1)"; then
  fail "dtf doctor passed a closed master"
fi
grep -q "master  *NO   the Spark master spark://127.0.0.1:$closed" <<<"$out" ||
  fail "dtf doctor: $out"
echo "ok: dtf doctor checks spark-submit and the master"

a="$(launch --profile spark --dry-run --json)" || fail "dry run"
b="$(launch --profile spark --dry-run --json)" || fail "dry run"
[[ "$a" == "$b" ]] || fail "--dry-run --json differs between two calls"
grep -q '"spark_submit": \[' <<<"$a" || fail "dry run JSON without spark-submit: $a"
grep -q '"driver": "#!/usr/bin/env python3' <<<"$a" || fail "dry run JSON without the driver"
"$py" -c 'import json, sys; compile(json.loads(sys.stdin.read())["driver"], "driver.py", "exec")' <<<"$a" ||
  fail "the driver is not valid Python"
text="$(launch --profile spark --dry-run)" || fail "dry run (text)"
grep -q -- "--archives .*dtf-env-<env-id>.zip#dtf-env" <<<"$text" ||
  fail "dry run text without the archives"
echo "ok: dry run stable, with spark-submit and the driver"

# --- 2. census runs to their end ----------------------------------------------
start=$SECONDS
launch --profile spark --set train.epochs=6 --metrics-out "$work/metrics.json" \
  >"$work/run1.out" 2>"$work/run1.err" || {
  show "$work/run1.err" "$runs"/*/spark-submit.out "$runs"/*/*/stderr
  fail "launch exited $?"
}
id="$(ls "$runs" | head -1)"
run="$runs/$id"
echo "ok: run $id succeeded in $((SECONDS - start)) s"
acc="$(json "$work/metrics.json" 'j["accuracy"]')"
"$py" -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 0.85 else 1)' "$acc" ||
  fail "accuracy $acc < 0.85"
echo "ok: accuracy $acc (1 PS, 2 workers)"
[[ "$(json "$run/tasks.json" 'j["state"]')" == succeeded ]] ||
  fail "tasks.json: $(cat "$run/tasks.json")"
[[ "$(app_of "$id")" == app-* ]] || fail "tasks.json names no application: $(cat "$run/tasks.json")"
for t in ps-0 worker-0 worker-1; do
  [[ "$(json "$run/$t/exit.json" 'j["state"]')" == exited ]] ||
    fail "$t: $(cat "$run/$t/exit.json")"
done
[[ "$(stat -c %a "$run/secret")" == 600 ]] || fail "secret mode"
[[ "$(json "$run/plan.json" 'j["tls"]')" == True ]] || fail "plan.json: tls off"
grep -q -- "--secret-file" "$run/driver.py" && fail "the driver holds a secret flag"
nothing_left "$id"
out="$("$dtf" status --job "$job" "$id")" || fail "dtf status: $out"
grep -q succeeded <<<"$out" || fail "dtf status: $out"
out="$("$dtf" logs --job "$job" "$id" worker:0)" || fail "dtf logs"
[[ -n "$out" ]] || fail "dtf logs: nothing"

echo "ok: nothing left running, status and logs read the run"

launch --profile spark --set train.mode=allreduce --set train.device=cpu \
  --set train.epochs=6 --metrics-out "$work/allreduce.json" \
  >"$work/ar.out" 2>"$work/ar.err" || {
  show "$work/ar.err" "$runs"/*/spark-submit.out
  fail "allreduce launch exited $?"
}
ar_id="$(ls "$runs" | sort | tail -n 1)"
[[ ! -e "$runs/$ar_id/ps-0" ]] || fail "allreduce: the plan has a parameter server"
acc="$(json "$work/allreduce.json" 'j["accuracy"]')"
"$py" -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 0.85 else 1)' "$acc" ||
  fail "allreduce accuracy $acc < 0.85"
nothing_left "$ar_id"
echo "ok: allreduce with 2 workers, accuracy $acc"

# --- 3. too few cores -----------------------------------------------------------
profile few "$SPARK_MASTER_URL" "slot_wait = 5"
start=$SECONDS
if launch --profile few --workers 6 >"$work/few.out" 2>&1; then
  fail "7 tasks ran on 4 cores"
fi
grep -q "too few executors: the cluster gave [0-9] of the 7" "$work/few.out" ||
  { show "$work/few.out"; fail "no clear error for too few cores"; }
echo "ok: too few cores, in $((SECONDS - start)) s: $(grep -o 'too few executors[^;]*' "$work/few.out" | head -1)"
nothing_left "$(ls -t "$runs" | head -1)"

# --- 4. faults: a task killed, dtf stop, Ctrl-C -----------------------------------
id="$(launch --profile spark --detach --set train.steps=1000000 2>"$work/d1.err")" ||
  { show "$work/d1.err"; fail "detached launch"; }
run="$runs/$id"
wait_ready "$run" ps-0 worker-0 worker-1
victim="$(pgrep -f -- "serve .*--role worker --index 1 .*--run-id $id" | head -1)"
[[ -n "$victim" ]] || fail "no dtf serve of worker:1"
kill -KILL "$victim"
deadline=$((SECONDS + 120))
until [[ "$(json "$run/tasks.json" 'j["state"]')" != running ]]; do
  ((SECONDS < deadline)) || fail "run $id still running after worker:1 was killed"
  sleep 0.5
done
[[ "$(json "$run/tasks.json" 'j["state"]')" == failed ]] ||
  fail "after a kill: $(cat "$run/tasks.json")"
grep -q "task worker:1 killed by SIGKILL.*barrier stage" "$run/supervisor.log" ||
  { show "$run/supervisor.log"; fail "the failure does not name worker:1"; }
nothing_left "$id"
echo "ok: worker:1's dtf serve killed: the run failed naming it, nothing left"

id="$(launch --profile spark --detach --set train.steps=1000000 2>"$work/d2.err")" ||
  { show "$work/d2.err"; fail "detached launch"; }
run="$runs/$id"
wait_ready "$run" ps-0 worker-0 worker-1
out="$("$dtf" status --job "$job" "$id")"
grep -q running <<<"$out" || fail "status while running: $out"
"$dtf" stop --job "$job" "$id" >"$work/stop.out" 2>&1 || { cat "$work/stop.out"; fail "dtf stop"; }
deadline=$((SECONDS + 120))
until [[ "$(json "$run/tasks.json" 'j["state"]')" != running ]]; do
  ((SECONDS < deadline)) || fail "run $id still running after dtf stop"
  sleep 0.5
done
[[ "$(json "$run/tasks.json" 'j["state"]')" == stopped ]] ||
  fail "tasks.json after stop: $(cat "$run/tasks.json")"
nothing_left "$id"
echo "ok: dtf stop killed the application, nothing left"

before="$(ls "$runs" | wc -l)"
# dtf itself in the background (a shell function would be a subshell that
# ignores SIGINT), as a terminal's Ctrl-C reaches it.
"$dtf" launch --job "$job" --profile spark --set train.steps=1000000 \
  >"$work/int.out" 2>&1 &
pid=$!
deadline=$((SECONDS + 120))
until [[ "$(ls "$runs" | wc -l)" -gt "$before" ]]; do
  ((SECONDS < deadline)) || fail "no run directory for the foreground run"
  sleep 0.3
done
id="$(ls -t "$runs" | head -1)"
wait_ready "$runs/$id" ps-0 worker-0 worker-1
kill -INT "$pid"
wait "$pid"
rc=$?
((rc != 0)) || fail "an interrupted launch exited 0"
[[ "$(json "$runs/$id/tasks.json" 'j["state"]')" == stopped ]] ||
  fail "tasks.json after Ctrl-C: $(cat "$runs/$id/tasks.json")"
nothing_left "$id"
echo "ok: Ctrl-C killed the application (exit $rc), nothing left"
echo "PASS"
