#!/usr/bin/env bash
# predict_k8s_test.sh DTF SOURCE_DIR BUILD_DIR SHARED_DIR
#
# dtf predict --profile with backend = "kubernetes", against
# process_cluster.py as kubectl: each pod of the rendered Indexed Job runs
# as a local process (its volumes under a root of its own, the data volume
# a hostPath on this test's work directory, mounted at /data). The Titanic
# example trained for a few steps scores its records:
#   a. the model shipped in the run's ConfigMap, 2 workers, JSON lines,
#      whole files: byte for byte the one-process output, with progress
#   b. the model on the data volume, 3 workers over 2 files (records
#      split), CSV with --keep: byte for byte the one-process output
#   c. an input pattern nothing matches in the pods: exit non-zero, the
#      error names the pattern and the shard's pod, no output, no shard
#   d. Ctrl-C while the pods run (their input a FIFO nobody writes): exit
#      130, no output, the run's objects deleted
#   each time: no pod process left, no object left in the cluster.
# Exit 77 (skipped) without the venv (PyYAML) or the data.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/process_cluster_env.sh"
process_cluster_start "$@" data/titanic/train.csv dtf_predict_k8s

# nothing_or_shard_left NAME: nothing left in the cluster (nothing_left),
# and no shard file the tasks wrote left in the job directory here.
nothing_or_shard_left() {
  nothing_left "$1"
  local left
  left="$(find "$work/titanic" -name '*.shard-*' 2>/dev/null || true)"
  [[ -z "$left" ]] || fail "$1: shard files left: $left"
  echo "ok: $1: no pod, object or shard left"
}

# --- the model ----------------------------------------------------------------
mkdir -p "$work/titanic/profiles"
cd "$work/titanic"
sed "s#csv = \[\"[^\"]*\"\]#csv = [\"$shared/data/titanic/train.csv\"]#" \
  "$src/examples/titanic/dtf.toml" >dtf.toml
"$dtf" gen-records --job dtf.toml >/dev/null
"$dtf" train --job dtf.toml --steps 5 --no-eval --quiet >/dev/null
[[ -d out/model ]] || fail "no model at out/model"
[[ $(ls records/eval | wc -l) -eq 2 ]] || fail "not 2 eval files: $(ls records/eval)"

cat >profiles/k8s.toml <<TOML
backend = "kubernetes"
workers = 2
threads = 1
[kubernetes]
image = "dtf:test"
data = { host_path = "$work", mount_path = "/data" }
TOML

# run_of NAME: the run id NAME.err names.
run_of() {
  sed -n 's/^dtf: predict: run \([0-9a-z-]*\) .*/\1/p' "$1.err" | head -1
}

# calls ID PATTERN: how many of the run's kubectl calls match PATTERN.
calls() {
  grep -c -- "$2" <(grep -F -- "$1" "$work/kubectl.log") || true
}

# deleted NAME: the run's objects deleted, once.
deleted() {
  local id kinds=jobs.batch,services,configmaps,secrets
  id="$(run_of "$1")"
  [[ -n "$id" ]] || fail "$1: no run id on stderr"
  [[ $(calls "$id" \
       " delete $kinds --selector=dtf.dev/run-id=$id --ignore-not-found$") \
     -eq 1 ]] || fail "$1: the run's objects were not deleted once"
}

# fetched NAME WORKERS: every shard fetched from its pod and released, the
# run's objects deleted.
fetched() {
  local id task=" -- /usr/bin/dtf task"
  id="$(run_of "$1")"
  [[ $(calls "$id" "$task shard-fetch /work/predictions$") -eq $2 ]] \
    || fail "$1: not $2 shard-fetch calls: $(grep -F "$id" "$work/kubectl.log")"
  [[ $(calls "$id" "$task shard-release /work/predictions$") -eq $2 ]] \
    || fail "$1: not $2 shard-release calls"
  deleted "$1"
}

# same NAME MODEL POD_INPUT FORMAT WORKERS [ARGS...]: the profile's pods
# over POD_INPUT (paths in the pods) give the bytes one process gives over
# the same records here.
same() {
  local name="$1" model="$2" input="$3" format="$4" workers="$5" rc=0
  shift 5
  "$dtf" predict --model out/model --input 'records/eval/*' \
    --format "$format" "$@" --output "$name.one.$format" 2>"$name.one.err" \
    || { cat "$name.one.err" >&2; fail "$name: one-process predict failed"; }
  nice "$dtf" predict --model "$model" --input "$input" --format "$format" "$@" \
    --profile k8s --workers "$workers" --output "$name.$format" \
    >"$name.out" 2>"$name.err" || rc=$?
  cat "$name.err"
  if [[ $rc -ne 0 ]]; then
    fail "$name: predict --profile k8s exited $rc"
  fi
  [[ $(wc -c <"$name.one.$format") -gt 1000 ]] \
    || fail "$name: one-process output too small"
  cmp "$name.one.$format" "$name.$format" || fail "$name: outputs differ"
  grep -q "records scored" "$name.err" || fail "$name: no progress line"
  fetched "$name" "$workers"
  echo "ok: $name: $(wc -l <"$name.$format") lines, the same as one process"
  nothing_or_shard_left "$name"
}

# --- a. the model shipped, whole files ---------------------------------------
same shipped out/model '/data/titanic/records/eval/*' jsonl 2
# The model went in the run's ConfigMap, mounted where the pods read it.
manifests=".dtf/runs/$(run_of shipped)/kubernetes"
grep -q '^  variables.dtf: "' "$manifests/configmap.yaml" \
  || fail "shipped: no model in $manifests/configmap.yaml"
grep -q -- '- "/etc/dtf/model"$' "$manifests/job.yaml" \
  || fail "shipped: the pods do not read /etc/dtf/model"

# --- b. the model on the data volume, records split ---------------------------
same on_volume /data/titanic/out/model '/data/titanic/records/eval/*' csv 3 \
  --keep Sex
manifests=".dtf/runs/$(run_of on_volume)/kubernetes"
[[ ! -e "$manifests/configmap.yaml" ]] || fail "on_volume: the model was shipped"
grep -q -- '- "/data/titanic/out/model"$' "$manifests/job.yaml" \
  || fail "on_volume: the pods do not read the model on the volume"

# --- c. nothing matches in the pods --------------------------------------------
rc=0
nice "$dtf" predict --model out/model --input '/data/nothing*' --format jsonl \
  --profile k8s --workers 2 --output nothing.jsonl \
  >nothing.out 2>nothing.err || rc=$?
cat nothing.err
[[ $rc -ne 0 ]] || fail "nothing: predict succeeded with no input"
grep -q '/data/nothing\*' nothing.err \
  || fail "nothing: the error does not name the pattern"
grep -Eq 'shard [0-9]|dtf-[a-z0-9-]+-[0-9]+-[a-z0-9]{5}' nothing.err \
  || fail "nothing: the error names neither the shard nor its pod"
[[ ! -e nothing.jsonl ]] || fail "nothing: an output was written"
deleted nothing
echo "ok: nothing fails (exit $rc): $(grep -m1 'nothing' nothing.err)"
nothing_or_shard_left nothing

# --- d. Ctrl-C while the pods run -------------------------------------------------
# The pods block reading a FIFO; SIGINT reaches dtf as Ctrl-C would (job
# control on: a background command of a script otherwise ignores SIGINT).
mkdir -p "$work/stall"
mkfifo "$work/stall/part-0.tfrecord"
set -m
nice "$dtf" predict --model out/model --input '/data/stall/*' --format jsonl \
  --profile k8s --workers 2 --output stopped.jsonl \
  >stopped.out 2>stopped.err &
pid=$!
set +m
deadline=$((SECONDS + 60))
until [[ $(kubectl get pods --output=json | grep -c '"phase": "Running"') -eq 2 ]]; do
  ((SECONDS < deadline)) || { cat stopped.err; fail "stopped: no 2 pods running"; }
  sleep 0.2
done
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
cat stopped.err
[[ $rc -eq 130 ]] || fail "stopped: exit $rc, not 130"
grep -q 'interrupted' stopped.err || fail "stopped: no interruption reported"
[[ ! -e stopped.jsonl ]] || fail "stopped: an output was written"
deleted stopped
echo "ok: stopped: exit $rc"
nothing_or_shard_left stopped

echo "PASS: predict_k8s"
