#!/usr/bin/env bash
# dtf predict --profile on a Spark profile, against the real Spark
# standalone cluster of the ctest fixture spark_cluster. The Titanic example
# trained for a few steps scores its records with 2 workers, each a barrier
# task of one Spark application writing its shard into its task directory:
#   1. 2 files over 2 workers (whole files), CSV: byte for byte the
#      one-process output; every task's exit.json says exited
#   2. a shard that fails (an input that is no TFRecord): exit non-zero, the
#      error names the task and the file, the output is left as it was
#   3. dtf gen-records --profile spark: the job's conversion over 2 barrier
#      tasks, each writing its own shards; the records directory is byte
#      for byte what the one-process gen-records wrote (same files, same
#      records in each), and no task directory keeps a shard
#   each time: no process of the run, no executor of the application and no
#   shard left
# Usage: predict_spark_test.sh DTF SOURCE_DIR SHARED_DIR WORK_DIR CLUSTER_DIR
set -uo pipefail
dtf="$(realpath "$1")"
src="$(realpath "$2")"
shared="$(realpath "$3")"
work="$(realpath -m "$4")"
cluster_dir="$(realpath "$5")"
py=/usr/bin/python3

fail() { echo "FAIL: $*" >&2; exit 1; }
json() {  # json FILE EXPR: a value of a JSON file (EXPR over j)
  "$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
[[ -f "$cluster_dir/env" ]] || fail "no Spark cluster in $cluster_dir (fixture spark_cluster)"
set -a
# shellcheck disable=SC1091
source "$cluster_dir/env"
set +a

rm -rf "$work"
mkdir -p "$work/titanic/profiles"
cd "$work/titanic" || fail "cd $work/titanic"
sed "s#csv = \[\"[^\"]*\"\]#csv = [\"$shared/data/titanic/train.csv\"]#" \
  "$src/examples/titanic/dtf.toml" >dtf.toml
"$dtf" gen-records --job dtf.toml >/dev/null || fail "gen-records"
"$dtf" train --job dtf.toml --steps 5 --no-eval --quiet >/dev/null || fail "train"
[[ -d out/model ]] || fail "no model at out/model"
runs="$work/runs"
cat >profiles/spark.toml <<TOML
backend = "spark"
workers = 2

[spark]
master = "$SPARK_MASTER_URL"
spark_submit = "$SPARK_SUBMIT"
python = "$SPARK_PYTHON"
executor_memory = "512m"
run_dir = "$runs"
conf = { "spark.driver.host" = "127.0.0.1", "spark.driver.bindAddress" = "127.0.0.1" }
TOML

last_run() { echo "$runs/$(ls -t "$runs" | head -1)"; }
# nothing_left: within 60 s no process runs anything under the run
# directories and no executor of the last application is left, and no
# shard output or index is left.
nothing_left() {
  local deadline=$((SECONDS + 60)) left app
  app="$(json "$(last_run)/tasks.json" 'j.get("spark_app", "")')"
  while :; do
    left="$(pgrep -a -f -- "$runs/" || true)"
    [[ -n "$app" ]] && left+="$(pgrep -a -f -- "CoarseGrainedExecutorBackend.*$app" || true)"
    [[ -z "$left" ]] && break
    ((SECONDS >= deadline)) && fail "left: $left"
    sleep 0.5
  done
  left="$(find "$runs" "$work/titanic" -name '*.shard-*' 2>/dev/null || true)"
  [[ -z "$left" ]] || fail "shard files left: $left"
  echo "ok: no task, no executor and no shard left"
}

# --- 1. whole files, CSV ----------------------------------------------------------
name=files_csv
"$dtf" predict --model out/model --input 'records/train/*' --format csv \
  --keep Ticket,Sex --output "$name.one.csv" 2>"$name.one.err" ||
  { cat "$name.one.err" >&2; fail "one-process predict failed"; }
rc=0
"$dtf" predict --model out/model --input 'records/train/*' --format csv \
  --keep Ticket,Sex --profile spark --workers 2 --output "$name.csv" \
  >"$name.out" 2>"$name.err" || rc=$?
run="$(last_run)"
if ((rc != 0)); then
  cat "$name.err" >&2
  tail -n 20 "$run"/spark-submit.out "$run"/*/stderr >&2 2>/dev/null
  fail "predict --profile spark exited $rc"
fi
[[ $(wc -c <"$name.one.csv") -gt 1000 ]] || fail "one-process output too small"
cmp "$name.one.csv" "$name.csv" || fail "outputs differ"
grep -q "submitted the Spark application" "$name.err" || { cat "$name.err" >&2; fail "no spark-submit"; }
grep -q "merged 2 shards into $name.csv" "$name.err" || { cat "$name.err" >&2; fail "no merge"; }
[[ "$(json "$run/tasks.json" 'j["state"]')" == succeeded ]] ||
  fail "tasks.json: $(cat "$run/tasks.json")"
for t in worker-0 worker-1; do
  [[ "$(json "$run/$t/exit.json" 'j["state"]')" == exited ]] ||
    fail "$t: $(cat "$run/$t/exit.json")"
done
[[ ! -e out/.dtf ]] || fail "the runtime was packed beside the model (out/.dtf)"
ls .dtf/pack/dtf-env-*.zip >/dev/null 2>&1 || fail "no runtime archive in .dtf/pack"
echo "ok: $name: $(wc -l <"$name.csv") lines, the same as one process"
nothing_left

# --- 2. a shard that fails ----------------------------------------------------------
mkdir -p zzz
{ head -c 64 /dev/zero | tr '\0' x; echo "not a record"; } >zzz/zzz.tfrecord
echo old >kept.csv
rc=0
"$dtf" predict --model out/model --input 'records/train/*' --input zzz/zzz.tfrecord \
  --format csv --profile spark --workers 2 --output kept.csv >bad.out 2>bad.err || rc=$?
((rc != 0)) || fail "bad: predict succeeded on a file that is no TFRecord"
grep -q "error: task worker:0 exited with status [1-9]" bad.err ||
  { cat bad.err >&2; fail "bad: the error does not name worker:0"; }
grep -q "zzz/zzz.tfrecord: corrupt record" bad.err ||
  { cat bad.err >&2; fail "bad: the error does not name the file"; }
[[ "$(cat kept.csv)" == old ]] || fail "bad: kept.csv changed"
echo "ok: bad fails (exit $rc): $(grep -m1 "error: task worker:0" bad.err)"
nothing_left

# --- 3. gen-records over Spark ------------------------------------------------------
cp -r records records.one
rc=0
"$dtf" gen-records --job dtf.toml --profile spark --workers 2 --overwrite \
  >gen.out 2>gen.err || rc=$?
run="$(last_run)"
if ((rc != 0)); then
  cat gen.err >&2
  tail -n 20 "$run"/spark-submit.out "$run"/*/stderr >&2 2>/dev/null
  fail "gen-records --profile spark exited $rc"
fi
grep -q "submitted the Spark application" gen.err || { cat gen.err >&2; fail "gen: no spark-submit"; }
diff -r records.one records >/dev/null || { diff -r records.one records >&2; fail "gen: records differ from one process's"; }
for t in worker-0 worker-1; do
  [[ "$(json "$run/$t/exit.json" 'j["state"]')" == exited ]] ||
    fail "gen: $t: $(cat "$run/$t/exit.json")"
  [[ -z "$(find "$run/$t" -name 'part-*' 2>/dev/null)" ]] || fail "gen: $t kept shards"
done
echo "ok: gen-records over Spark: $(find records -name 'part-*.tfrecord' | wc -l) shards, the same bytes as one process"
nothing_left
echo "PASS"
