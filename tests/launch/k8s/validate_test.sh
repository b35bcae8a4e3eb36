#!/usr/bin/env bash
# validate_test.sh DTF SOURCE_DIR BUILD_DIR
#
# Renders a census run with backend = "kubernetes" in both flavours through
# `dtf launch --render`, and validates those renders and the golden files
# of manifests_test.cc offline: kubernetes-validate --strict against
# Kubernetes 1.33 (Job successPolicy and backoffLimitPerIndex are GA there)
# and the TFJob against Kubeflow's CRD schema. Then `dtf launch` without a
# cluster must fail naming the kubectl context problem. Exit 77 (skipped)
# when the venv cannot be made (no PyPI).
set -euo pipefail
dtf="$1" src="$2" build="$3"
python="$(bash "$src/tests/launch/k8s_env.sh" "$build")" || {
  echo "SKIP: no venv with kubernetes-validate" >&2
  exit 77
}
work="$(mktemp -d /tmp/dtf_k8s_validate.XXXXXX)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/job/profiles"
cp "$src/examples/census/dtf.toml" "$work/job/dtf.toml"
for flavour in job tfjob; do
  cat >"$work/job/profiles/k8s-$flavour.toml" <<TOML
backend = "kubernetes"
ps = 2
workers = 3
max_restarts = 1
threads = 2
[kubernetes]
namespace = "ml"
image = "registry.example/ml/dtf:0.1.0"
flavour = "$flavour"
data = { host_path = "/srv/shared/data", mount_path = "/srv/shared/data" }
output = { pvc = "dtf-out", mount_path = "/srv/out" }
job_dir = "/srv/job/examples/census"
node_selector = { "kubernetes.io/arch" = "amd64" }
tolerations = [{ key = "dedicated", value = "ml", effect = "NoSchedule" }]
[kubernetes.worker]
requests = { cpu = "2", memory = "4Gi" }
limits = { cpu = "4", memory = "8Gi" }
TOML
  (cd "$work/job" && "$dtf" launch --profile "k8s-$flavour" \
     --render "$work/render-$flavour" --set train.epochs=2 \
     --set train.output_dir=/srv/out/census)
  grep -q 'claimName: "dtf-out"' "$work/render-$flavour/$flavour.yaml"
  # The Secret holds the run's secret: owner-only.
  [[ "$(stat -c %a "$work/render-$flavour/secret.yaml")" == 600 ]]
  grep -q '^  secret: "' "$work/render-$flavour/secret.yaml"
  # And, with TLS (the default), the CA's certificate and each task's
  # certificate and key; never the CA's key.
  for key in ca.pem ps-0.pem ps-1.key worker-0.pem worker-2.key; do
    grep -q "^  $key: \"" "$work/render-$flavour/secret.yaml"
  done
  if grep -q 'ca.key' "$work/render-$flavour/secret.yaml"; then
    echo "FAIL: the CA's key is in the Secret" >&2
    exit 1
  fi
  grep -q -- '- "--tls-task-names"$' "$work/render-$flavour/$flavour.yaml"
  # A dry run prints the same objects, with no secret and no TLS material.
  (cd "$work/job" && "$dtf" launch --profile "k8s-$flavour" --dry-run) \
    >"$work/dry-$flavour.yaml"
  grep -q 'secret: "(generated when the run is applied)"' \
    "$work/dry-$flavour.yaml"
  grep -q 'worker-2.key: "(generated when the run is applied)"' \
    "$work/dry-$flavour.yaml"
  if grep -q 'BEGIN' "$work/dry-$flavour.yaml"; then
    echo "FAIL: a dry run printed key material" >&2
    exit 1
  fi
done
# The template dtf init writes, uncommented, renders too.
"$dtf" init "$work/init" >/dev/null
sed -n 's/^# \([a-z_]* = \|\[\)/\1/p' \
  "$work/init/profiles/kubernetes.example.toml" | sed 's/  *#.*$//' \
  >"$work/init/profiles/kubernetes.toml"
grep -q '^backend = "kubernetes"$' "$work/init/profiles/kubernetes.toml"
(cd "$work/init" && "$dtf" launch --profile kubernetes --dry-run) \
  >"$work/dry-init.yaml"
"$python" "$src/tests/launch/k8s/validate_manifests.py" \
  "$src/tests/launch/testdata/k8s/tfjob_v1_openapi_schema.json" 1.33.0 \
  "$work/dry-init.yaml" "$work/render-job" "$work/render-tfjob" "$work/dry-job.yaml" \
  "$work/dry-tfjob.yaml" "$src/tests/launch/testdata/k8s/job.yaml" \
  "$src/tests/launch/testdata/k8s/tfjob.yaml"

# dtf predict --profile renders an Indexed Job of `dtf predict` shards:
# with the model shipped (a local model directory) in a ConfigMap of its
# files, or found on the data volume (a path in the pods): both valid.
(cd "$work/init" && "$dtf" gen-records --job dtf.toml >/dev/null &&
   "$dtf" train --job dtf.toml --steps 5 --no-eval --quiet >/dev/null)
cat >"$work/init/profiles/k8s-predict.toml" <<TOML
backend = "kubernetes"
workers = 3
max_restarts = 1
threads = 2
[kubernetes]
namespace = "ml"
image = "registry.example/ml/dtf:0.1.0"
data = { host_path = "/srv/shared/data", mount_path = "/data" }
node_selector = { "kubernetes.io/arch" = "amd64" }
[kubernetes.worker]
requests = { cpu = "2", memory = "4Gi" }
TOML
(cd "$work/init" && "$dtf" predict --profile k8s-predict --model out/model \
   --input '/data/x*' --output o.jsonl --render "$work/render-predict")
(cd "$work/init" && "$dtf" predict --profile k8s-predict \
   --model /data/models/m --input '/data/x*' --format csv --keep x \
   --output o.csv --render "$work/render-predict-volume")
for render in render-predict render-predict-volume; do
  grep -q 'completionMode: "Indexed"' "$work/$render/job.yaml"
  grep -q 'name: "predict"' "$work/$render/job.yaml"
  grep -q -- '- "--shard-from-env"$' "$work/$render/job.yaml"
  grep -q -- '- "/data/x\*"$' "$work/$render/job.yaml"
done
grep -q '^  model.toml: "' "$work/render-predict/configmap.yaml"
grep -q '^  variables.dtf: "' "$work/render-predict/configmap.yaml"
[[ ! -e "$work/render-predict-volume/configmap.yaml" ]]
grep -q -- '- "/data/models/m"$' "$work/render-predict-volume/job.yaml"
"$python" "$src/tests/launch/k8s/validate_manifests.py" \
  "$src/tests/launch/testdata/k8s/tfjob_v1_openapi_schema.json" 1.33.0 \
  "$work/render-predict" "$work/render-predict-volume"

# The validation can fail: an unknown field in the Job, a wrong type in the
# TFJob.
sed 's/^  podReplacementPolicy: "Failed"$/  podReplacementPolicy: "Failed"\n  bogusField: 1/' \
  "$src/tests/launch/testdata/k8s/job.yaml" >"$work/bad-job.yaml"
sed 's/^      replicas: 2$/      replicas: "two"/' \
  "$src/tests/launch/testdata/k8s/tfjob.yaml" >"$work/bad-tfjob.yaml"
for bad in bad-job bad-tfjob; do
  if "$python" "$src/tests/launch/k8s/validate_manifests.py" \
      "$src/tests/launch/testdata/k8s/tfjob_v1_openapi_schema.json" 1.33.0 \
      "$work/$bad.yaml"; then
    echo "FAIL: $bad.yaml passed validation" >&2
    exit 1
  fi
done

# No cluster: a clear error, nothing applied, exit status 2 or 3 (not a
# crash).
printf '' >"$work/kubeconfig"
set +e
out="$(cd "$work/job" && KUBECONFIG="$work/kubeconfig" "$dtf" launch \
  --profile k8s-job 2>&1)"
rc=$?
set -e
echo "$out"
[[ $rc -ne 0 && $rc -lt 128 ]]
grep -q "kubectl has no current context" <<<"$out"
grep -q -- "--render DIR" <<<"$out"

# The applied path against a stand-in kubectl that records its command
# lines: launch applies the run directory's manifests; status, logs and
# stop select the run by its label.
mkdir -p "$work/bin"
cat >"$work/bin/kubectl" <<'SH'
#!/bin/sh
echo "$*" >>"$KUBECTL_LOG"
case "$*" in
  "config current-context") echo test-cluster ;;
  *" version --request-timeout=5s") echo "Server Version: v1.33.0" ;;
  *" apply --filename "*) echo "job.batch/x created" ;;
esac
SH
chmod +x "$work/bin/kubectl"
export KUBECTL_LOG="$work/kubectl.log"
id="$(cd "$work/job" && PATH="$work/bin:$PATH" "$dtf" launch --profile k8s-job)"
[[ -f "$work/job/.dtf/runs/$id/kubernetes/job.yaml" ]]
[[ "$(stat -c %a "$work/job/.dtf/runs/$id/kubernetes/secret.yaml")" == 600 ]]
grep -q '"namespace": "ml"' "$work/job/.dtf/runs/$id/kubernetes.json"
(cd "$work/job" && PATH="$work/bin:$PATH" "$dtf" status "$id" &&
   PATH="$work/bin:$PATH" "$dtf" logs -f "$id" &&
   PATH="$work/bin:$PATH" "$dtf" stop "$id")
cat "$KUBECTL_LOG"
diff - "$KUBECTL_LOG" <<LOG
config current-context
--namespace=ml version --request-timeout=5s
--namespace=ml apply --filename $work/job/.dtf/runs/$id/kubernetes
--namespace=ml get jobs.batch,services,configmaps,secrets,pods --selector=dtf.dev/run-id=$id --output=wide
--namespace=ml logs --prefix --all-containers --max-log-requests=10000 --tail=-1 --selector=dtf.dev/run-id=$id --follow
--namespace=ml delete jobs.batch,services,configmaps,secrets --selector=dtf.dev/run-id=$id --ignore-not-found
LOG
echo "PASS"
