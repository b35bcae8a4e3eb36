#!/usr/bin/env bash
# sharded_reshard.sh DTF SHARED_DIR WORK_DIR
#
# `dtf launch --resume --ps N` of a run with sharded checkpoints: the
# Titanic job launched (detached) on 2 PS and 2 workers with
# train.sharded_checkpoints and a checkpoint every 10 steps is stopped once
# a checkpoint is committed, then resumed on 3 PS. Then:
#   1. every one of the 3 PS restored its part of the 2-PS checkpoint (ps:2
#      included), and the run succeeded;
#   2. the export holds no variables.dtf: its SavedModel's variables were
#      written by the 3 PS (4 data files), and `dtf predict` scores every
#      eval record from it, reading the tables' rows on demand;
#   3. a second --resume of the succeeded run is refused.
# The work directory is removed when the test passes.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/e2e_lib.sh"
e2e_start "DTF SHARED_DIR WORK_DIR" "$@"

run=""
cleanup() {
  if [[ -n "$run" ]]; then "$dtf" stop --job "$job" "$run" > /dev/null 2>&1 || true; fi
}
trap cleanup EXIT

job="$work/dtf.toml"
sed -e "s#\.\./\.\./\.\./shared#$shared#g" \
  "$source_dir/examples/titanic/dtf.toml" > "$job"
cd "$work"
"$dtf" gen-records --job "$job" > gen-records.log 2>&1 \
  || { show_tail gen-records.log; fail "dtf gen-records"; }
start="$(date +%s.%N)"
run="$("$dtf" launch --job "$job" --ps 2 --workers 2 --detach \
  --set train.sharded_checkpoints=true --set train.checkpoint_every_steps=10 \
  --set train.epochs=30 2> launch.err)" \
  || { show_tail launch.err; fail "dtf launch --detach"; }
run_dir="$work/.dtf/runs/$run"
echo "ok: run $run started on 2 PS"

committed=""
for ((i = 0; i < 600; i++)); do
  committed="$(ls out/model.ckpt-*.index 2> /dev/null | head -1 || true)"
  [[ -n "$committed" ]] && break
  sleep 0.1
done
[[ -n "$committed" ]] \
  || { show_tail "$run_dir/worker-0/stderr"; fail "no checkpoint committed in 60 s"; }
"$dtf" stop --job "$job" "$run" > stop.log 2>&1 \
  || { show_tail stop.log; fail "dtf stop $run"; }
echo "ok: stopped once $committed was committed"

"$dtf" launch --job "$job" --resume "$run" --ps 3 > resume.log 2>&1 \
  || { show_tail resume.log "$run_dir/ps-2/stderr" "$run_dir/worker-0/stderr"; \
       fail "dtf launch --resume $run --ps 3"; }
for p in 0 1 2; do
  grep -q "restored [^ ]*model.ckpt-" "$run_dir/ps-$p/stderr" \
    || { show_tail "$run_dir/ps-$p/stderr"; fail "ps:$p restored no sharded checkpoint"; }
done
echo "ok: resumed on 3 PS, each restoring its part; succeeded in $(elapsed "$start") s"

[[ ! -e out/model/variables.dtf ]] || fail "out/model/variables.dtf: the chief gathered the model"
data="$(ls out/model/saved_model/variables/ | grep -c '^variables\.data-0000[0-3]-of-00004$' || true)"
[[ "$data" == 4 ]] \
  || fail "out/model/saved_model/variables: $(ls out/model/saved_model/variables/)"
"$dtf" predict --model out/model --input "records/eval/*" > predict.jsonl 2> predict.err \
  || { show_tail predict.err; fail "dtf predict on the sharded export"; }
lines="$(wc -l < predict.jsonl)"
((lines > 100)) || fail "dtf predict scored $lines records"
"$py" -c '
import json, sys
for line in open(sys.argv[1]):
    p = json.loads(line)["probability"]
    assert 0 <= p <= 1, line' predict.jsonl || fail "predict.jsonl: a bad probability"
echo "ok: the export's SavedModel variables on 4 shards; dtf predict scored $lines records"

if "$dtf" launch --job "$job" --resume "$run" --ps 2 > again.log 2>&1; then
  fail "a succeeded run was resumed"
fi
grep -q "nothing to resume" again.log || { show_tail again.log; fail "no reason given"; }
run=""
echo "ok: a succeeded run is not resumed"
echo "PASS"
cd /
rm -rf "$work"
