#!/usr/bin/env bash
# sharded_kill.sh DTF SHARED_DIR WORK_DIR
#
# A parameter server killed while it writes its shard of a sharded
# checkpoint (train.sharded_checkpoints): the census job as it is (a
# model of a few MB), launched on 2 PS and 2 workers with max_restarts = 1
# and a checkpoint every 30 steps; every PS waits 2 s in each shard it
# writes once its data file is open (DTF_TEST_SAVE_SHARD_DELAY_MS, read by
# `dtf serve` for tests), so the kill lands mid-write whatever the
# machine's speed. Once one checkpoint is committed, ps:1 is killed with
# SIGKILL as soon as its data file of the next one appears under its
# temporary name. Then:
#   1. that checkpoint is not committed (no .index), and the one before
#      is whole: TensorFlow's `checkpoint` file names it and every file
#      its index needs is there;
#   2. the supervisor restarts ps:1, which restores that earlier checkpoint
#      (every slice it reads is checksummed);
#   3. the chief writes the checkpoint again once ps:1 answers, the run
#      succeeds, and no temporary data file is left.
# The work directory is removed when the test passes.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/e2e_lib.sh"
e2e_start "DTF SHARED_DIR WORK_DIR" "$@"

run=""
cleanup() {
  if [[ -n "$run" ]]; then "$dtf" stop --job "$job" "$run" >&2 || true; fi
}
trap cleanup EXIT

job="$work/dtf.toml"
sed -e "s#\.\./\.\./\.\./shared#$shared#g" \
    "$source_dir/examples/census/dtf.toml" > "$job"
cd "$work"
"$dtf" gen-records --job "$job" > gen-records.log 2>&1 \
  || { show_tail gen-records.log; fail "dtf gen-records"; }
cat > restart.toml <<'EOF'
backend = "local"
ps = 2
workers = 2
host = "127.0.0.1"
max_restarts = 1
EOF
start="$(date +%s.%N)"
run="$(DTF_TEST_SAVE_SHARD_DELAY_MS=2000 "$dtf" launch --job "$job" --profile restart.toml --detach \
  --set train.sharded_checkpoints=true --set train.checkpoint_every_steps=30 \
  --set train.keep_checkpoints=2 --set train.heartbeat_timeout=5 \
  --set train.epochs=2 --metrics-out kill.json 2> launch.err)" \
  || { show_tail launch.err; fail "dtf launch --detach"; }
run_dir="$work/.dtf/runs/$run"
echo "ok: run $run started"

# The first committed checkpoint, then ps:1's shard of the next one.
committed=""
for ((i = 0; i < 6000; i++)); do
  committed="$(ls out/model.ckpt-*.index 2> /dev/null | head -1 || true)"
  [[ -n "$committed" ]] && break
  sleep 0.05
done
[[ -n "$committed" ]] \
  || { show_tail "$run_dir/worker-0/stderr"; fail "no checkpoint committed in 300 s"; }
read -r ps1_pid < <("$py" -c '
import json, sys
t = next(t for t in json.load(open(sys.argv[1]))["tasks"] if t["task"] == "ps:1")
print(t["pid"])' "$run_dir/tasks.json")
writing=""
for ((i = 0; i < 30000; i++)); do
  for f in out/model.ckpt-*.data-00001-of-00003.tmp; do
    [[ -e "$f" ]] || continue
    step="${f#out/model.ckpt-}"
    step="${step%%.*}"
    [[ -e "out/model.ckpt-$step.index" ]] && continue
    writing="$step"
  done
  [[ -n "$writing" ]] && break
  sleep 0.01
done
[[ -n "$writing" ]] || fail "ps:1 never wrote a shard after $committed"
kill -9 "$ps1_pid" || fail "kill -9 $ps1_pid (ps:1)"
echo "ok: killed ps:1 (pid $ps1_pid) while it wrote its shard of step $writing"

# 1. Not committed; the one before whole.
sleep 0.5
[[ ! -e "out/model.ckpt-$writing.index" ]] \
  || fail "step $writing was committed without ps:1's shard"
latest="$("$py" -c '
import re, sys
m = re.search(r"model_checkpoint_path: \"([^\"]+)\"", open(sys.argv[1]).read())
print(m.group(1) if m else "")' out/checkpoint)"
[[ -n "$latest" && -e "out/$latest.index" ]] \
  || fail "out/checkpoint names '$latest', which has no index"
for k in 0 1 2; do
  [[ -e "out/$latest.data-0000$k-of-00003" ]] \
    || fail "out/$latest.data-0000$k-of-00003 is missing"
done
echo "ok: step $writing not committed; $latest whole"

# 2 and 3. The run goes on and succeeds.
for ((i = 0; i < 6000; i++)); do
  state="$("$dtf" status "$run" --job "$job" --json 2> /dev/null \
    | "$py" -c 'import json,sys; print(json.load(sys.stdin)["state"])' || true)"
  [[ "$state" == succeeded || "$state" == failed || "$state" == stopped ]] && break
  sleep 0.1
done
if [[ "$state" != succeeded ]]; then
  show_tail "$run_dir/supervisor.log" "$run_dir/ps-1/stderr" "$run_dir/worker-0/stderr"
  fail "run $run ended '$state', not succeeded"
fi
run=""
grep -q "ps:1 killed by SIGKILL; starting it again" "$run_dir/supervisor.log" \
  || { show_tail "$run_dir/supervisor.log"; fail "the supervisor did not restart ps:1"; }
grep -q "restoring from .*out/model.ckpt-" "$run_dir/ps-1/stderr" \
  || { show_tail "$run_dir/ps-1/stderr"; fail "ps:1 did not restore a sharded checkpoint"; }
restored="$(grep -o "restored [^ ]*model.ckpt-[0-9]*" "$run_dir/ps-1/stderr" | tail -1)"
restored="${restored##*-}"
[[ -n "$restored" && "$restored" -lt "$writing" ]] \
  || fail "ps:1 restored step '$restored', not one before $writing"
echo "ok: ps:1 restarted from step $restored; run succeeded in $(elapsed "$start") s"
if ls out/*.tmp > /dev/null 2>&1; then fail "temporary files left: $(ls out/*.tmp)"; fi
[[ ! -e out/checkpoint.dtf ]] || fail "out/checkpoint.dtf: the chief gathered the model"
at_least "$(metric kill.json accuracy)" 0.80 "accuracy with ps:1 killed mid-checkpoint"
echo "PASS"
cd /
rm -rf "$work"
