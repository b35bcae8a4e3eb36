#!/usr/bin/env bash
# pods_as_processes_test.sh DTF SOURCE_DIR BUILD_DIR SHARED_DIR [FLAVOUR...]
#
# The census job (examples/census, data SHARED_DIR/data/adult) rendered for
# backend = "kubernetes" with `dtf launch --render`, then every pod of the
# render started as a local process by run_pods.py (volumes materialised in
# a temporary root per pod, the pods' DNS names mapped to loopback, init
# containers first): the Indexed Job (JOB_COMPLETION_INDEX) and the TFJob
# (TF_CONFIG as the operator sets it) must each train the model to an
# accuracy of at least 0.85, over mutual TLS (the default): every pod's
# dtf serve reads the run's CA and its task's certificate and key from the
# Secret's files (mode 0400) by its task's name. Exit 77 (skipped) without
# the venv or the data.
set -euo pipefail
dtf="$1" src="$2" build="$3" shared="$4"
shift 4
flavours=("$@")
[[ ${#flavours[@]} -gt 0 ]] || flavours=(job tfjob)
if [[ ! -f "$shared/data/adult/adult.data" ]]; then
  echo "SKIP: no $shared/data/adult" >&2
  exit 77
fi
python="$(bash "$src/tests/launch/k8s_env.sh" "$build")" || {
  echo "SKIP: no venv with PyYAML" >&2
  exit 77
}
work="$(mktemp -d /tmp/dtf_k8s_pods.XXXXXX)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/job/profiles"
cp "$src/examples/census/dtf.toml" "$work/job/dtf.toml"
for flavour in "${flavours[@]}"; do
  # The job's data paths (../../../shared/data/adult/...) land in the data
  # volume's mount from the pods' job directory.
  cat >"$work/job/profiles/k8s-$flavour.toml" <<TOML
backend = "kubernetes"
ps = 1
workers = 2
threads = 1
[kubernetes]
image = "dtf:test"
flavour = "$flavour"
job_dir = "/srv/k8s/examples/census"
data = { host_path = "$shared/data", mount_path = "/srv/shared/data" }
gen_records = true
TOML
  (cd "$work/job" && "$dtf" launch --profile "k8s-$flavour" \
     --render "$work/render-$flavour")
  render="$work/render-$flavour"
  grep -q -- '- "--tls-task-names"$' "$render/$flavour.yaml"
  grep -q '^  ca.pem: "' "$render/secret.yaml"
  grep -q '^  worker-1.key: "' "$render/secret.yaml"
  if grep -q 'ca.key' "$render/secret.yaml"; then
    echo "FAIL: the CA's key is in the Secret" >&2
    exit 1
  fi
  out="$("$python" "$src/tests/launch/k8s/run_pods.py" "$render" \
    "$dtf" "$work/pods-$flavour" 600)"
  echo "$out"
  # Each pod read its TLS files from the Secret's mount, mode 0400.
  for pod in "$work/pods-$flavour"/pod-*; do
    for f in ca.pem ps-0.key worker-0.pem worker-1.key; do
      [[ "$(stat -c %a "$pod/etc/dtf/secret/$f")" == 400 ]]
    done
  done
  accuracy="$(sed -n 's/.*global step [0-9]*; .*accuracy \([0-9.]*\).*/\1/p' \
    <<<"$out" | tail -1)"
  echo "$flavour: accuracy $accuracy"
  python3 -c "import sys; sys.exit(0 if float('$accuracy') >= 0.85 else 1)"
done
echo "PASS"
