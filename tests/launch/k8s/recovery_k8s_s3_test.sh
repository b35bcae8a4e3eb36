#!/usr/bin/env bash
# recovery_k8s_s3_test.sh DTF SOURCE_DIR BUILD_DIR SHARED_DIR
#
# A Kubernetes training run with no volume but its Secret and job: the
# census job's records are in a bucket of a SeaweedFS server this test
# starts on loopback (tests/testing/s3_server.sh) and its output_dir is in
# the bucket too. `dtf launch --profile k8s` (ps = 1, workers = 2,
# max_restarts = 1, [s3] profile naming an AWS profile of the launcher's
# credentials file) against process_cluster.py as kubectl, whose pods run
# as local processes. The pods' environment has the endpoint but no
# credentials (the launcher's come from its ~/.aws profile, which the pods
# do not read): they reach the bucket with the run Secret's s3-credentials.
#   1. the Secret holds s3-credentials with the launcher's key; the Job's
#      pods run dtf serve --s3-credentials; no manifest but the Secret
#      holds the secret key, and launch warns of no lost output
#   2. the chief writes a checkpoint into the bucket; worker 1's pod is
#      killed (SIGKILL); the Job replaces it and the replacement's
#      dtf serve --restore goes on from the bucket's checkpoint
#   3. the Job completes, the chief's last evaluation at an accuracy of
#      0.84 or more, the model and the checkpoint in the bucket
#   4. `dtf stop <run id>` leaves no pod process and no object.
# Exit 77 (skipped) without the venv (PyYAML) or the data.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/process_cluster_env.sh"
process_cluster_start "$@" data/adult/adult.data dtf_k8s_s3

start="$(date +%s.%N)"
s3dir="$work/s3-server"
trap 'bash "$src/tests/testing/s3_server.sh" stop "$s3dir" || true; process_cluster_cleanup' EXIT
# The server's settings, not exported: the launcher reads its credentials
# from a profile of its own credentials file, the pods see the endpoint.
# shellcheck disable=SC1090
source <(bash "$src/tests/testing/s3_server.sh" start "$s3dir" "$(realpath "$build")")
export AWS_ENDPOINT_URL AWS_REGION
key_id="$AWS_ACCESS_KEY_ID" secret_key="$AWS_SECRET_ACCESS_KEY"
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
mkdir -p "$work/aws"
printf '[dtf-test]\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
  "$key_id" "$secret_key" > "$work/aws/credentials"
export AWS_SHARED_CREDENTIALS_FILE="$work/aws/credentials"
echo "ok: S3 server at $AWS_ENDPOINT_URL ($(elapsed "$start") s)"

source "$src/tests/testing/s3_curl.sh"
S3CURL_USER="$key_id:$secret_key"
# keys PREFIX: the keys under PREFIX of bucket census, one per line.
keys() { s3_keys census "$1"; }
s3curl -X PUT "$AWS_ENDPOINT_URL/census" > /dev/null

job="$work/job"
mkdir -p "$job/profiles"
sed -e "s#\.\./\.\./\.\./shared#$shared#g" \
    -e 's#^records = .*#records = "s3://census/records"#' \
    -e 's#^output_dir = .*#output_dir = "s3://census/out"#' \
    "$src/examples/census/dtf.toml" > "$job/dtf.toml"
AWS_PROFILE=dtf-test "$dtf" gen-records --job "$job/dtf.toml" > /dev/null 2> "$work/gen.err" \
  || { cat "$work/gen.err" >&2; fail "gen-records into s3://census/records"; }
cat >"$job/profiles/k8s.toml" <<TOML
backend = "kubernetes"
ps = 1
workers = 2
threads = 1
max_restarts = 1
[kubernetes]
image = "dtf:test"
job_dir = "/srv/k8s/examples/census"
[s3]
profile = "dtf-test"
TOML

# --- 1. the run, its Secret ------------------------------------------------------
(cd "$job" && nice "$dtf" launch --profile k8s \
   --set train.epochs=60 --set train.checkpoint_every_steps=20 \
   >"$work/launch.out" 2>"$work/launch.err") \
  || { cat "$work/launch.err" >&2; fail "dtf launch --profile k8s failed"; }
id="$(cat "$work/launch.out")"
[[ "$id" =~ ^[0-9a-z-]+$ ]] || fail "launch printed no run id: $id"
if grep -q "lost with its pods" "$work/launch.err"; then
  fail "the output is in the bucket, yet launch warns: $(cat "$work/launch.err")"
fi
rendered="$job/.dtf/runs/$id/kubernetes"
"$python" - "$rendered/secret.yaml" "$key_id" "$secret_key" <<'PY' || fail "the run's Secret (above)"
import base64, sys, yaml
secret = yaml.safe_load(open(sys.argv[1]))
text = base64.b64decode(secret["data"]["s3-credentials"]).decode()
for line in (f"AWS_ACCESS_KEY_ID={sys.argv[2]}", f"AWS_SECRET_ACCESS_KEY={sys.argv[3]}",
             "DTF_S3_PATH_STYLE=true"):
    if line not in text.splitlines():
        sys.exit(f"FAIL: the Secret's s3-credentials lacks {line.split('=')[0]}")
PY
grep -q -- '- "/etc/dtf/secret/s3-credentials"$' "$rendered/job.yaml" \
  || fail "the pods do not run dtf serve --s3-credentials"
if grep -rlF "$secret_key" "$job/.dtf/runs/$id" | grep -v '/secret.yaml$'; then
  fail "the secret key is in a file of the run other than the Secret"
fi
echo "ok: run $id applied; its Secret holds the tasks' S3 credentials ($(elapsed "$start") s)"

# --- 2. a checkpoint in the bucket; worker 1's pod killed and replaced -----------
deadline=$((SECONDS + 300))
until keys out/checkpoint.dtf | grep -q .; do
  ((SECONDS < deadline)) || die "no checkpoint in s3://census/out in 300 s"
  pods >/dev/null
  sleep 1
done
pods >"$work/pods"
worker1="$(awk '$2 == 2 {print $1}' "$work/pods")"
[[ -n "$worker1" ]] || die "no pod for index 2"
kill_pod "$worker1"
echo "ok: checkpoint in the bucket; killed $worker1 at $(elapsed "$start") s"
deadline=$((SECONDS + 120))
while :; do
  pods >"$work/pods"
  replacement="$(awk -v old="$worker1" '$2 == 2 && $1 != old {print $1}' "$work/pods")"
  [[ -n "$replacement" ]] && break
  ((SECONDS < deadline)) || die "worker 1's pod not replaced in 120 s"
  sleep 1
done
deadline=$((SECONDS + 180))
until grep -q 'worker:1: resuming at global step [1-9]' "$(log_of "$replacement")" 2>/dev/null; do
  ((SECONDS < deadline)) || die "the replacement did not resume from the bucket's checkpoint"
  pods >/dev/null
  sleep 1
done
echo "ok: $replacement: $(grep -m1 -o 'worker:1: resuming at global step [0-9]*' "$(log_of "$replacement")")"

# --- 3. the Job completes; the model in the bucket --------------------------------
wait_job Complete 480
pods >"$work/pods"
chief="$(awk '$2 == 1 {print $1}' "$work/pods")"
accuracy="$(sed -n 's/.*global step [0-9]*; .*accuracy \([0-9.]*\).*/\1/p' \
  "$(log_of "$chief")" | tail -1)"
[[ -n "$accuracy" ]] || die "no evaluation in the chief's log"
at_least "$accuracy" 0.84 "the chief's final accuracy"
# The replacement succeeded, or was finishing when the chief was done and
# the Job's controller removed it.
replaced="$(awk -v p="$replacement" '$1 == p {print $3}' "$work/pods")"
[[ -z "$replaced" || "$replaced" == Succeeded ]] || die "$replacement ended $replaced"
for key in out/model/model.toml out/checkpoint.dtf; do
  keys "$key" | grep -qx "$key" || die "no s3://census/$key after the run"
done
echo "ok: the Job completed ($(elapsed "$start") s); the model and the checkpoint in the bucket"

# --- 4. dtf stop -------------------------------------------------------------------
stop_run
echo "PASS: recovery_k8s_s3 ($(elapsed "$start") s)"
