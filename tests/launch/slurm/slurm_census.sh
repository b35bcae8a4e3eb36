# Sourced by the tests of dtf runs on a real single-node Slurm: with $dtf,
# $src, $shared and $work set (the test's arguments), starts the cluster
# (tests/testing/slurm_cluster.sh; exit 77, skipped, where it cannot be
# had) and stops it on exit, writes the census job with its records under
# $work/census ($job, its runs in $runs) and picks a base port ($port).
# Gives fail, show, json, clean_after and accuracy_ok.
cluster="$src/tests/testing/slurm_cluster.sh"
dir="$(mktemp -d /tmp/dtf-slurm.XXXXXX)"
py=/usr/bin/python3

fail() { echo "FAIL: $*" >&2; exit 1; }
show() {
  local f
  for f in "$@"; do
    [[ -f "$f" ]] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }
  done
}
json() {  # json FILE EXPR: a value of a JSON file (EXPR over j)
  "$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

rm -rf "$work"
mkdir -p "$work/census/profiles"
out="$(bash "$cluster" start "$dir")"
rc=$?
((rc == 77)) && exit 77
((rc == 0)) || fail "slurm_cluster.sh start exited $rc"
cleanup() {
  scancel --user="$(id -un)" 2>/dev/null
  bash "$cluster" stop "$dir"
}
trap cleanup EXIT
eval "$out"

job="$work/census/dtf.toml"
sed "s#\.\./\.\./\.\./shared#$shared#g" "$src/examples/census/dtf.toml" >"$job"
(cd "$work/census" && "$dtf" gen-records --job "$job" >/dev/null) ||
  fail "gen-records"
port=$((20000 + RANDOM % 20000))
runs="$work/census/.dtf/runs"

clean_after() {  # clean_after RUN_ID: nothing of the run left
  local left
  [[ -z "$(squeue -h)" ]] || fail "squeue after run $1: $(squeue -h)"
  left="$(pgrep -a -f -- "--run-id $1" || true)"
  [[ -z "$left" ]] || fail "processes of run $1 left: $left"
}
accuracy_ok() {  # accuracy_ok METRICS_FILE
  local acc
  acc="$(json "$1" 'j["accuracy"]')"
  "$py" -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 0.85 else 1)' "$acc" ||
    fail "accuracy $acc < 0.85 ($1)"
  echo "$acc"
}
