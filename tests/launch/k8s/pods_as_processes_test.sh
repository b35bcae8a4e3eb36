#!/usr/bin/env bash
# pods_as_processes_test.sh DTF SOURCE_DIR BUILD_DIR SHARED_DIR [FLAVOUR...]
#
# The census job (examples/census, data SHARED_DIR/data/adult) rendered for
# backend = "kubernetes" with `dtf launch --render`, then every pod of the
# render started as a local process by run_pods.py (volumes materialised in
# a temporary root per pod, the pods' DNS names mapped to loopback, init
# containers first): the Indexed Job (JOB_COMPLETION_INDEX) and the TFJob
# (TF_CONFIG as the operator sets it), and the Indexed Job of an allreduce
# run on CPUs (Gloo between the workers' pods), must each train the model
# to an accuracy of at least 0.85, over mutual TLS (the default): every pod's
# keys init container (dtf task keys) copies the run's secret, the CA's
# certificate and its own task's certificate and key from the Secret's
# mount (which only it mounts) into the memory volume its dtf serve reads
# them from (mode 0400): no pod's container holds another task's key.
# Exit 77 (skipped) without the venv or the data.
set -euo pipefail
dtf="$1" src="$2" build="$3" shared="$4"
shift 4
flavours=("$@")
[[ ${#flavours[@]} -gt 0 ]] || flavours=(job tfjob allreduce)
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
for case in "${flavours[@]}"; do
  # "allreduce": the Indexed Job of an allreduce run on CPUs (no parameter
  # server; the workers' pods meet over Gloo).
  flavour="$case" sets=()
  if [[ "$case" == allreduce ]]; then
    flavour=job
    sets=(--set train.mode=allreduce --set train.device=cpu)
  fi
  # The job's data paths (../../../shared/data/adult/...) land in the data
  # volume's mount from the pods' job directory.
  cat >"$work/job/profiles/k8s-$case.toml" <<TOML
backend = "kubernetes"
ps = 1
workers = 2
threads = 1
[kubernetes]
image = "dtf:test"
flavour = "$flavour"
job_dir = "/srv/k8s/examples/census"
data = { host_path = "$shared/data", mount_path = "/srv/shared/data" }
output = { host_path = "$work/out-$case", mount_path = "/srv/out" }
gen_records = true
TOML
  mkdir -p "$work/out-$case"
  # The checkpoints and model go to the output volume, which outlives the
  # pods (relative to the job directory, as the data paths are); launch
  # warns when they would not.
  sets+=(--set train.output_dir=../../../out/census)
  (cd "$work/job" && "$dtf" launch --profile "k8s-$case" "${sets[@]}" \
     --render "$work/render-$case") 2>"$work/render-$case.err"
  if grep -q "where nothing outlives them" "$work/render-$case.err"; then
    echo "FAIL: output on the output volume, yet launch warns:" >&2
    cat "$work/render-$case.err" >&2
    exit 1
  fi
  render="$work/render-$case"
  grep -q -- '- "--tls-task-names"$' "$render/$flavour.yaml"
  grep -q '^  ca.pem: "' "$render/secret.yaml"
  grep -q '^  worker-1.key: "' "$render/secret.yaml"
  if grep -q 'ca.key' "$render/secret.yaml"; then
    echo "FAIL: the CA's key is in the Secret" >&2
    exit 1
  fi
  out="$("$python" "$src/tests/launch/k8s/run_pods.py" "$render" \
    "$dtf" "$work/pods-$case" 600)"
  echo "$out"
  if [[ "$case" == allreduce ]]; then
    if grep -q 'ps-0' "$render/secret.yaml"; then
      echo "FAIL: an allreduce render has a parameter server" >&2
      exit 1
    fi
    grep -q 'worker:0: joined the Gloo collective as rank 0 of 2' <<<"$out"
  fi
  # Each pod's container read the run's secret, the CA's certificate and
  # its own task's certificate and key (mode 0400) from the memory volume,
  # and nothing else is there; only the init container mounts the Secret.
  # A pod's task: pod-<i> of the Indexed Job (ps first), pod-<type>-<i> of
  # the TFJob (its Worker i is worker:i+1).
  ps=1
  [[ "$case" == allreduce ]] && ps=0
  for pod in "$work/pods-$case"/pod-*; do
    base="${pod##*/pod-}"
    case "$base" in
      chief-0) task=worker-0 ;;
      ps-*) task="$base" ;;
      worker-*) task="worker-$((${base#worker-} + 1))" ;;
      *) if ((base < ps)); then task="ps-$base"; else task="worker-$((base - ps))"; fi ;;
    esac
    want="ca.pem secret $task.key $task.pem"
    have="$(cd "$pod/etc/dtf/secret" && ls | sort | tr '\n' ' ')"
    if [[ "$have" != "$(tr ' ' '\n' <<<"$want" | sort | tr '\n' ' ')" ]]; then
      echo "FAIL: $pod/etc/dtf/secret holds $have; want $want only" >&2
      exit 1
    fi
    for f in $want; do
      [[ -f "$pod/etc/dtf/secret/$f" && ! -L "$pod/etc/dtf/secret/$f" ]]
      [[ "$(stat -c %a "$pod/etc/dtf/secret/$f")" == 400 ]]
    done
    grep -q "dtf: ${task/-/:}: secret, ca.pem, $task.pem, $task.key from" \
      "$pod/log.txt"
  done
  accuracy="$(sed -n 's/.*global step [0-9]*; .*accuracy \([0-9.]*\).*/\1/p' \
    <<<"$out" | tail -1)"
  echo "$case: accuracy $accuracy"
  python3 -c "import sys; sys.exit(0 if float('$accuracy') >= 0.85 else 1)"
  # The model and the last checkpoint are on the output volume's node path,
  # after every pod is gone.
  for f in census/model/model.toml census/checkpoint.dtf; do
    if [[ ! -s "$work/out-$case/$f" ]]; then
      echo "FAIL: $case: no $f on the output volume" >&2
      exit 1
    fi
  done
done
# Without an output volume the launcher says the model would be lost.
sed -i '/^output = /d' "$work/job/profiles/k8s-job.toml"
(cd "$work/job" && "$dtf" launch --profile k8s-job --render "$work/render-lost") \
  2>"$work/render-lost.err"
grep -q "the run's checkpoints and exported model are lost with its pods" \
  "$work/render-lost.err"
echo "PASS"
