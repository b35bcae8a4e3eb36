#!/usr/bin/env bash
# tests/e2e/init_train.sh DTF SHARED_DIR WORK_DIR
#
# The user's first day, through the real binary and with no hand edits:
#   dtf init --from-csv  ->  dtf gen-records --job  ->  dtf train --job
#   -> dtf predict
# on the Titanic CSV (80/20 hash split; accuracy >= 0.78 on the held-out
# part) and on the UCI Adult files given a header line (accuracy >= 0.85 on
# all 16,281 rows of adult.test).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/e2e_lib.sh"
e2e_start "DTF SHARED_DIR WORK_DIR" "$@"

# --- Titanic ---------------------------------------------------------------
cd "$work"
"$dtf" init titanic --from-csv "$shared/data/titanic/train.csv" --label Survived
cd titanic
"$dtf" gen-records --job dtf.toml
# Spread over 3 local tasks, each writing its own shards: the same files,
# byte for byte, and shards in place are kept without --overwrite.
cp -r records records.one
"$dtf" gen-records --job dtf.toml --profile local --workers 3 2>spread.err &&
  fail "gen-records --profile over existing shards succeeded"
grep -q "already holds shards" spread.err || { cat spread.err >&2; fail "no 'already holds shards'"; }
"$dtf" gen-records --job dtf.toml --profile local --workers 3 --overwrite
diff -r records.one records || fail "gen-records --profile local: records differ"
rm -rf records.one
echo "ok: gen-records spread over 3 local tasks writes the same records"
"$dtf" train --job dtf.toml --metrics-out metrics.json
at_least "$(metric metrics.json accuracy)" 0.78 "titanic accuracy"
[[ "$(metric metrics.json eval_split)" == eval ]] || fail "titanic: not evaluated on the eval split"

# Predictions: one line per held-out record, each a probability in [0, 1].
eval_rows=$("$dtf" inspect records/eval/* | wc -l)
"$dtf" predict --model out/model --input 'records/eval/*' --keep PassengerId > predictions.jsonl
[[ "$(wc -l < predictions.jsonl)" -eq "$eval_rows" ]] || fail "predict wrote $(wc -l < predictions.jsonl) lines for $eval_rows records"
/usr/bin/python3 - predictions.jsonl <<'PY'
import json, sys
for line in open(sys.argv[1]):
    row = json.loads(line)
    assert 0.0 <= row["probability"] <= 1.0, row
    assert row["class"] in (0, 1), row
    assert isinstance(row["PassengerId"], int), row
PY
echo "ok: titanic predictions ($eval_rows rows)"

# --- UCI Adult, given a header line ------------------------------------------
cd "$work"
header="age,workclass,fnlwgt,education,education_num,marital_status,occupation,relationship,race,gender,capital_gain,capital_loss,hours_per_week,native_country,income"
{ echo "$header"; cat "$shared/data/adult/adult.data"; } > adult_train.csv
# UCI's adult.test may start with a line that is not a record ("|1x3 Cross
# validator").
{ echo "$header"; grep -v '^|' "$shared/data/adult/adult.test"; } > adult_test.csv
"$dtf" init census --from-csv adult_train.csv --eval-csv adult_test.csv --label income
cd census
"$dtf" gen-records --job dtf.toml
"$dtf" train --job dtf.toml --metrics-out metrics.json
at_least "$(metric metrics.json accuracy)" 0.85 "adult accuracy"
[[ "$(metric metrics.json eval_examples)" == 16281 ]] || fail "adult: evaluated on $(metric metrics.json eval_examples) rows, not 16281"
echo "PASS"
