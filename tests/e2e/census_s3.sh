#!/usr/bin/env bash
# tests/e2e/census_s3.sh DTF SHARED_DIR BUILD_DIR WORK_DIR
#
# The census job with nothing but s3:// paths in its job file, against a
# real S3 server (SeaweedFS, tests/testing/s3_server.sh) this script starts
# on loopback and stops by its pid at the end:
#   1. the UCI Adult CSVs put in a bucket (a key with a space in it);
#      dtf gen-records --job reads them there and writes the shards there
#   2. dtf launch: 2 PS x 2 workers on this machine train from the bucket
#      with output_dir in the bucket and max_restarts = 1; once the bucket
#      holds a checkpoint, worker:1 is killed with SIGKILL, started again by
#      the launcher and resumes from the bucket's checkpoint; the run
#      succeeds with accuracy >= 0.84 and its metrics go to the bucket
#   3. dtf predict reads the model and the records from the bucket and
#      writes its output there; dtf pack zip writes the job's archive (the
#      job alone) there and dtf pack list reads it back
#   4. TensorFlow (the venv of tests/interop/tf_env.sh; its S3 file system
#      is gone from TensorFlow 2.x, so the objects are downloaded first)
#      reads the records and loads the SavedModel from the bucket's copy;
#      its classify signature matches dtf predict within 1e-5
#   5. wrong credentials and a missing bucket: dtf fails naming the bucket;
#      dtf launch on a prefix without shards stops in its preflight, naming
#      this host and the prefix, before any task starts
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/e2e_lib.sh"
e2e_start "DTF SHARED_DIR BUILD_DIR WORK_DIR" "$@"

py=/usr/bin/python3
s3dir="$work/s3-server"
detached_run=""
cleanup() {
  if [[ -n "$detached_run" ]]; then
    "$dtf" stop --job "$work/census/dtf.toml" "$detached_run" >&2 || true
  fi
  bash "$source_dir/tests/testing/s3_server.sh" stop "$s3dir" || true
}
trap cleanup EXIT

t0="$(date +%s.%N)"
set -a
# shellcheck disable=SC1091
source <(bash "$source_dir/tests/testing/s3_server.sh" start "$s3dir" "$build_dir")
set +a
echo "ok: S3 server at $AWS_ENDPOINT_URL ($(elapsed "$t0") s)"

source "$source_dir/tests/testing/s3_curl.sh"
# keys PREFIX: the keys under PREFIX of bucket census, one per line.
keys() { s3_keys census "$1"; }

# --- 1. CSVs in the bucket, gen-records from and to it ---------------------
s3curl -X PUT "$AWS_ENDPOINT_URL/census" > /dev/null
s3curl -T "$shared/data/adult/adult.data" "$AWS_ENDPOINT_URL/census/raw%20csv/adult.data" > /dev/null
s3curl -T "$shared/data/adult/adult.test" "$AWS_ENDPOINT_URL/census/raw%20csv/adult.test" > /dev/null
mkdir -p "$work/census"
cd "$work/census"
job="$work/census/dtf.toml"
sed -e 's#^csv = .*#csv = { train = ["s3://census/raw csv/adult.data"], eval = ["s3://census/raw csv/adult.test"] }#' \
    -e 's#^records = .*#records = "s3://census/records"#' \
    -e 's#^output_dir = .*#output_dir = "s3://census/out"#' \
    "$source_dir/examples/census/dtf.toml" > "$job"
paths="$(grep -oE '"[^"]*(/|\.data|\.test|records|out)"' "$job" | sort -u)"
if grep -vq '^"s3://' <<< "$paths"; then
  fail "$job has paths that are not s3://: $paths"
fi
"$dtf" gen-records --job "$job" 2> gen.err || { show_tail gen.err; fail "gen-records from and to the bucket"; }
n="$(keys records/ | grep -c 'part-.*\.tfrecord\.gz$' || true)"
[[ "$n" == 8 ]] || fail "gen-records: $n shards under s3://census/records, not 8: $(keys records/)"
[[ ! -e records ]] || fail "gen-records wrote a local records directory"
echo "ok: gen-records wrote 8 shards to s3://census/records ($(elapsed "$t0") s)"

# --- 2. a cluster trains from the bucket; worker:1 killed and resumed --------
cat > restart.toml <<'EOF2'
backend = "local"
ps = 2
workers = 2
host = "127.0.0.1"
max_restarts = 1
EOF2
start="$(date +%s.%N)"
rc=0
detached_run="$("$dtf" launch --job "$job" --profile restart.toml \
  --metrics-out s3://census/metrics.json --detach \
  --set train.heartbeat_timeout=3 --set train.epochs=20 \
  --set train.checkpoint_every_steps=100 2> launch.err)" || rc=$?
[[ $rc -eq 0 ]] || { show_tail launch.err; fail "dtf launch --detach exited $rc"; }
run_dir="$work/census/.dtf/runs/$detached_run"
for ((i = 0; i < 3000; i++)); do
  keys out/checkpoint.dtf | grep -q . && break
  sleep 0.1
done
keys out/checkpoint.dtf | grep -q . \
  || { show_tail "$run_dir/supervisor.log" "$run_dir/worker-0/stderr"; fail "no checkpoint in s3://census/out after 300 s"; }
read -r w1_pid < <("$py" -c '
import json, sys
print(next(t for t in json.load(open(sys.argv[1]))["tasks"] if t["task"] == "worker:1")["pid"])' "$run_dir/tasks.json")
kill -9 "$w1_pid" || fail "kill -9 $w1_pid (worker:1) failed (the run ended before the kill?)"
echo "ok: checkpoint in the bucket; killed worker:1 (pid $w1_pid), $(elapsed "$start") s into the run"
for ((i = 0; i < 3000; i++)); do
  state="$("$dtf" status "$detached_run" --job "$job" --json 2>/dev/null \
    | "$py" -c 'import json,sys; s=json.load(sys.stdin); print(s["state"])' || true)"
  [[ "$state" == succeeded || "$state" == failed || "$state" == stopped ]] && break
  sleep 0.2
done
final="$("$dtf" status "$detached_run" --job "$job" --json)"
state="$("$py" -c '
import json, sys
s = json.loads(sys.argv[1])
w1 = next(t for t in s["tasks"] if t["task"] == "worker:1")
print(s["state"], s["exit_code"], w1["restarts"])' "$final")"
if [[ "$state" != "succeeded 0 1" ]]; then
  show_tail "$run_dir/supervisor.log" "$run_dir/worker-1/stderr" "$run_dir/worker-0/stderr"
  fail "run $detached_run ended '$state', not 'succeeded 0' with 1 restart of worker:1"
fi
grep -q "worker:1: resuming at global step" "$run_dir/worker-1/stderr" \
  || { show_tail "$run_dir/worker-1/stderr"; fail "worker:1 did not resume from the bucket's checkpoint"; }
echo "ok: run $detached_run succeeded, worker:1 restarted once and resumed: $(grep -o 'resuming at global step [0-9]*' "$run_dir/worker-1/stderr" | tail -1)"
detached_run=""
s3curl "$AWS_ENDPOINT_URL/census/metrics.json" > metrics.json
at_least "$(metric metrics.json accuracy)" 0.84 "accuracy (metrics from s3://census/metrics.json)"
for key in out/model/model.toml out/model/saved_model/saved_model.pb \
           out/model/saved_model/variables/variables.index out/checkpoint.dtf; do
  keys "$key" | grep -qx "$key" || fail "no s3://census/$key after the run"
done
keys out/ | grep -q 'out/events.out.tfevents\.' || fail "no TensorBoard events in s3://census/out"
echo "ok: checkpoints, events, model and SavedModel in s3://census/out"

# --- 3. predict from and to the bucket ----------------------------------------
"$dtf" predict --model s3://census/out/model \
  --input 's3://census/records/eval/part-*' \
  --output s3://census/predictions/eval.jsonl 2> predict.err \
  || { show_tail predict.err; fail "dtf predict from and to the bucket"; }
s3curl "$AWS_ENDPOINT_URL/census/predictions/eval.jsonl" > eval.jsonl
[[ "$(wc -l < eval.jsonl)" == 16281 ]] || fail "predict wrote $(wc -l < eval.jsonl) rows, not 16281"
echo "ok: dtf predict scored 16281 records from the bucket into s3://census/predictions/eval.jsonl"

first="$(keys records/eval/ | head -1)"
"$dtf" inspect "s3://census/$first" > inspect.out 2> inspect.err \
  || { show_tail inspect.err; fail "dtf inspect s3://census/$first"; }
grep -q '"age"' inspect.out || fail "dtf inspect s3://census/$first printed no age feature"
"$dtf" export --model s3://census/out/model --output s3://census/exported/sm 2> export.err \
  || { show_tail export.err; fail "dtf export to s3://census/exported/sm"; }
keys exported/sm/saved_model.pb | grep -qx exported/sm/saved_model.pb \
  || fail "dtf export wrote no s3://census/exported/sm/saved_model.pb"
echo "ok: dtf inspect reads a shard in the bucket; dtf export writes a SavedModel there"
archive="$("$dtf" pack zip --job "$job" --out s3://census/pack 2> pack.err)" \
  || { show_tail pack.err; fail "dtf pack zip --out s3://census/pack"; }
[[ "$archive" == s3://census/pack/job-*.zip ]] || fail "pack zip printed '$archive'"
"$dtf" pack list "$archive" | grep -q 'job archive of dtf .*, entry dtf.toml, without data' \
  || fail "dtf pack list $archive"
echo "ok: dtf pack zip wrote $archive (the job only: its data is in the bucket) and pack list reads it"

# --- 4. TensorFlow reads the bucket's records and SavedModel ----------------
python="$(bash "$source_dir/tests/interop/tf_env.sh" "$build_dir")"
mkdir -p from-s3
for key in $(keys records/eval/) $(keys out/model/saved_model/); do
  mkdir -p "from-s3/$(dirname "$key")"
  s3curl "$AWS_ENDPOINT_URL/census/$key" -o "from-s3/$key"
done
TF_CPP_MIN_LOG_LEVEL=3 "$python" - from-s3 eval.jsonl <<'PY' || fail "TensorFlow on the bucket's objects (above)"
import glob, json, sys
import numpy as np
import tensorflow as tf
root, predictions = sys.argv[1], sys.argv[2]
files = sorted(glob.glob(f"{root}/records/eval/part-*.tfrecord.gz"))
records = [r.numpy() for r in tf.data.TFRecordDataset(files, compression_type="GZIP")]
if len(records) != 16281:
    sys.exit(f"FAIL: TensorFlow read {len(records)} records, not 16281")
tf.train.Example.FromString(records[0])
m = tf.saved_model.load(f"{root}/out/model/saved_model")
scores = m.signatures["classify"](inputs=tf.constant(records))["scores"].numpy()[:, 1]
want = np.array([json.loads(l)["probability"] for l in open(predictions)])
d = float(np.max(np.abs(scores - want)))
if d > 1e-5:
    sys.exit(f"FAIL: the SavedModel's scores differ from dtf predict's by {d}")
print(f"ok: TensorFlow read 16281 records and ran the SavedModel from the bucket; max diff {d:.2e}")
PY

# --- 5. wrong credentials, a missing bucket ---------------------------------
rc=0
AWS_SECRET_ACCESS_KEY=wrong "$dtf" predict --model s3://census/out/model \
  --input 's3://census/records/eval/part-*' --output - > /dev/null 2> denied.err || rc=$?
[[ $rc -ne 0 ]] || fail "wrong credentials: dtf predict exited 0"
grep -q 'access denied to bucket "census"' denied.err \
  || { show_tail denied.err; fail "wrong credentials: the error does not say access to census was denied"; }
rc=0
"$dtf" predict --model s3://no-such-bucket/model --input 's3://census/records/eval/part-*' \
  --output - > /dev/null 2> missing.err || rc=$?
[[ $rc -ne 0 ]] || fail "missing bucket: dtf predict exited 0"
grep -q 'no such bucket "no-such-bucket"' missing.err \
  || { show_tail missing.err; fail "missing bucket: the error does not name it"; }
rc=0
runs_before="$(ls .dtf/runs | wc -l)"
"$dtf" launch --job "$job" --ps 1 --workers 1 \
  --set 'data.records="s3://census/nothing"' > /dev/null 2> preflight.err || rc=$?
[[ $rc -ne 0 ]] || fail "launch preflight: a run on an empty prefix started"
grep -q "preflight from $(hostname): no TFRecord shards in s3://census/nothing/train" preflight.err \
  || { show_tail preflight.err; fail "launch preflight: the error does not name the host and the prefix"; }
[[ "$(ls .dtf/runs | wc -l)" == "$runs_before" ]] || fail "launch preflight: a run was recorded"
echo "ok: wrong credentials and a missing bucket fail naming the bucket; the launch preflight names the host and the empty prefix"

echo "PASS ($(elapsed "$t0") s)"
