#!/usr/bin/env bash
# dtf launch --profile slurm with the census job's records and output_dir
# in a bucket of a SeaweedFS server this test starts on loopback
# (tests/testing/s3_server.sh), against a real single-node Slurm
# (tests/testing/slurm_cluster.sh). The launcher's credentials come from a
# profile of its own credentials file named by the profile's [s3] table;
# the tasks inherit the submitting environment (sbatch's default), which
# has the endpoint but no credentials they read, so they reach the bucket
# with the run's s3-credentials file in the shared run directory:
#   0. dtf doctor: the s3_credentials and s3_data rows pass, and s3_data
#      fails naming the bucket with a wrong secret
#   1. the dry run names the file and its variables, never their values
#   2. the run succeeds (accuracy >= 0.84), its model and checkpoint in the
#      bucket; the run directory's s3-credentials is mode 0600, the batch
#      script passes --s3, and no other file of the run holds the secret
# Usage: slurm_s3_test.sh DTF SOURCE_DIR SHARED_DIR BUILD_DIR WORK_DIR
# Exit 77 (skipped) where the cluster cannot be had.
set -euo pipefail
dtf="$(realpath "$1")"
src="$(realpath "$2")"
shared="$(realpath "$3")"
build="$(realpath -m "$4")"
work="$(realpath -m "$5")"
source "$src/tests/e2e/e2e_lib.sh"
cluster="$src/tests/testing/slurm_cluster.sh"
dir="$(mktemp -d /tmp/dtf-slurm-s3.XXXXXX)"
s3dir="$work/s3-server"

rm -rf "$work"
mkdir -p "$work/census/profiles"
rc=0
out="$(bash "$cluster" start "$dir")" || rc=$?
((rc == 77)) && exit 77
((rc == 0)) || fail "slurm_cluster.sh start exited $rc"
cleanup() {
  scancel --user="$(id -un)" 2>/dev/null || true
  bash "$cluster" stop "$dir" || true
  bash "$src/tests/testing/s3_server.sh" stop "$s3dir" || true
}
trap cleanup EXIT
eval "$out"
start="$(date +%s.%N)"

# The server's settings, not exported but the endpoint and region.
# shellcheck disable=SC1090
source <(bash "$src/tests/testing/s3_server.sh" start "$s3dir" "$build")
export AWS_ENDPOINT_URL AWS_REGION
key_id="$AWS_ACCESS_KEY_ID" secret_key="$AWS_SECRET_ACCESS_KEY"
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
mkdir -p "$work/aws"
printf '[dtf-test]\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
  "$key_id" "$secret_key" > "$work/aws/credentials"
export AWS_SHARED_CREDENTIALS_FILE="$work/aws/credentials"
source "$src/tests/testing/s3_curl.sh"
S3CURL_USER="$key_id:$secret_key"
# keys PREFIX: the keys under PREFIX of bucket census, one per line.
keys() { s3_keys census "$1"; }
s3curl -X PUT "$AWS_ENDPOINT_URL/census" > /dev/null
echo "ok: Slurm and an S3 server at $AWS_ENDPOINT_URL ($(elapsed "$start") s)"

job="$work/census/dtf.toml"
sed -e "s#\.\./\.\./\.\./shared#$shared#g" \
    -e 's#^records = .*#records = "s3://census/records"#' \
    -e 's#^output_dir = .*#output_dir = "s3://census/out"#' \
    "$src/examples/census/dtf.toml" > "$job"
AWS_PROFILE=dtf-test "$dtf" gen-records --job "$job" > /dev/null 2> "$work/gen.err" \
  || { show_tail "$work/gen.err"; fail "gen-records into s3://census/records"; }
cat >"$work/census/profiles/slurm.toml" <<TOML
backend = "slurm"
ps = 1
workers = 2
[slurm]
nodes = 1
time_limit = "00:20:00"
base_port = $((20000 + RANDOM % 20000))
[s3]
profile = "dtf-test"
TOML
launch() { "$dtf" launch --job "$job" --profile slurm "$@"; }

# --- 0. dtf doctor checks the bucket ---------------------------------------------
"$dtf" doctor --job "$job" --profile slurm > "$work/doctor.txt" 2>&1 \
  || { cat "$work/doctor.txt" >&2; fail "doctor failed with the right credentials"; }
grep -Eq '^s3_credentials +yes' "$work/doctor.txt" && grep -Eq '^s3_data +yes +readable from here: s3://census/records' "$work/doctor.txt" \
  || { cat "$work/doctor.txt" >&2; fail "doctor: no s3 rows"; }
printf '[dtf-test]\naws_access_key_id = %s\naws_secret_access_key = wrong\n' "$key_id" > "$work/aws/bad"
if AWS_SHARED_CREDENTIALS_FILE="$work/aws/bad" "$dtf" doctor --job "$job" --profile slurm > "$work/doctor-bad.txt" 2>&1; then
  fail "doctor passed with a wrong secret"
fi
grep -Eq '^s3_data +NO +.*census' "$work/doctor-bad.txt" \
  || { cat "$work/doctor-bad.txt" >&2; fail "doctor: a wrong secret does not fail s3_data naming the bucket"; }
echo "ok: dtf doctor checks the credentials and the bucket"

# --- 1. the dry run -------------------------------------------------------------
launch --dry-run > "$work/dry.txt"
grep -q '^s3:       .*/s3-credentials (mode 0600): AWS_ENDPOINT_URL, AWS_REGION, DTF_S3_PATH_STYLE, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY$' "$work/dry.txt" \
  || { cat "$work/dry.txt" >&2; fail "the dry run does not name the tasks' S3 variables"; }
if grep -qF "$secret_key" "$work/dry.txt"; then fail "the dry run shows the secret key"; fi
echo "ok: the dry run names the tasks' S3 variables, not their values"

# --- 2. the run ------------------------------------------------------------------
launch --set train.epochs=6 --metrics-out "$work/metrics.json" \
  > "$work/run.out" 2> "$work/run.err" || {
  show_tail "$work/run.err" "$work"/census/.dtf/runs/*/slurm-*.err "$work"/census/.dtf/runs/*/*/stderr
  fail "launch exited non-zero"
}
run="$(ls -d "$work"/census/.dtf/runs/* | head -1)"
at_least "$(metric "$work/metrics.json" accuracy)" 0.84 "accuracy of the Slurm run from the bucket"
for key in out/model/model.toml out/checkpoint.dtf; do
  keys "$key" | grep -qx "$key" || fail "no s3://census/$key after the run"
done
[[ "$(stat -c %a "$run/s3-credentials")" == 600 ]] || fail "s3-credentials mode $(stat -c %a "$run/s3-credentials")"
grep -q -- '--s3 ' "$run/sbatch.sh" || grep -q -- '--s3$' "$run/sbatch.sh" \
  || fail "the batch script does not pass --s3: $(cat "$run/sbatch.sh")"
leaks="$(grep -rlF "$secret_key" "$run" | grep -v '/s3-credentials$' || true)"
[[ -z "$leaks" ]] || fail "the secret key is in other files of the run: $leaks"
echo "ok: the tasks read and wrote the bucket with the run's s3-credentials (0600) only"
echo "PASS: slurm_s3 ($(elapsed "$start") s)"
