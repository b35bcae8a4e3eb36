#!/usr/bin/env bash
# process_cluster_test.sh DTF SOURCE_DIR BUILD_DIR SHARED_DIR
#
# process_cluster.py, the kubectl stand-in that runs Indexed Jobs' pods as
# local processes, on its own:
#   1. the census training Job `dtf launch --render` writes, applied: a pod
#      per index, named <job>-<index>-<5 characters>, with the template's
#      labels and the completion index; logs, exec of /usr/bin/dtf (the
#      real binary), status table, delete: every process gone
#   2. a hand-written Indexed Job (a shell) over a ConfigMap with data and
#      binaryData: the kubelet's projection, JOB_COMPLETION_INDEX, exec
#      binary-clean with its exit status, logs --tail; a killed pod
#      replaced while its index is within backoffLimitPerIndex, then the
#      Job failed (maxFailedIndexes 0) and its other pods stopped; a pod
#      that exits 0 is Succeeded and cannot be exec'd into
# Exit 77 (skipped) without the venv (PyYAML) or the data.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/process_cluster_env.sh"
process_cluster_start "$@" data/adult/adult.data dtf_process_cluster

# pods SELECTOR: "name index phase" per pod.
pods() {
  kubectl --namespace=default get pods --selector="$1" --output=json |
    "$python" -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    m = p["metadata"]
    print(m["name"], m["annotations"]["batch.kubernetes.io/job-completion-index"],
          p["status"]["phase"])'
}

# wait_phases SELECTOR WANT: within 30 s, pods' "index phase" lines sorted
# are WANT.
wait_phases() {
  local deadline=$((SECONDS + 30)) got
  while :; do
    got="$(pods "$1" | awk '{print $2, $3}' | sort)"
    [[ "$got" == "$2" ]] && return 0
    ((SECONDS >= deadline)) && fail "pods of $1: $(tr '\n' ';' <<<"$got"), not $(tr '\n' ';' <<<"$2")"
    sleep 0.2
  done
}

# group_of POD: the process group of POD's wrapper (its session's leader).
group_of() {
  pgrep -f -- "_run-pod $cluster/pods/$1\$"
}

# nothing_left: no process under the cluster's directory, no object.
nothing_left() {
  local left
  left="$(pgrep -a -f -- "$cluster/" || true)"
  [[ -z "$left" ]] || fail "$1: processes left: $left"
  left="$(kubectl get jobs.batch,services,configmaps,secrets,pods \
    --output=json | "$python" -c \
    'import json, sys; print(len(json.load(sys.stdin)["items"]))')"
  [[ "$left" == 0 ]] || fail "$1: $left objects left"
  [[ -z "$(ls "$cluster/pods")" ]] || fail "$1: pod directories left"
  echo "ok: $1: nothing left"
}

[[ "$(kubectl config current-context)" == process-cluster ]]
kubectl --namespace=default version --request-timeout=5s >/dev/null
rc=0
kubectl --namespace=default frobnicate 2>"$work/err" || rc=$?
[[ $rc -eq 1 ]] && grep -q 'unknown command "frobnicate"' "$work/err" \
  || fail "an unknown verb: exit $rc, $(cat "$work/err")"

# --- 1. the census training Job ------------------------------------------------
mkdir -p "$work/job/profiles"
cp "$src/examples/census/dtf.toml" "$work/job/dtf.toml"
cat >"$work/job/profiles/k8s.toml" <<TOML
backend = "kubernetes"
ps = 1
workers = 2
threads = 1
[kubernetes]
image = "dtf:test"
job_dir = "/srv/k8s/examples/census"
data = { host_path = "$shared/data", mount_path = "/srv/shared/data" }
gen_records = true
TOML
(cd "$work/job" && "$dtf" launch --profile k8s --set train.epochs=1000 \
   --render "$work/render" >/dev/null)
id="$(sed -n 's/^    dtf.dev\/run-id: "\(.*\)"$/\1/p' "$work/render/job.yaml" | head -1)"
[[ -n "$id" ]] || fail "no run id in the render"
nice kubectl --namespace=default apply --filename "$work/render" >"$work/apply.out"
grep -q "^job.batch/dtf-$id created$" "$work/apply.out" \
  || fail "apply: $(cat "$work/apply.out")"
wait_phases "dtf.dev/run-id=$id" $'0 Running\n1 Running\n2 Running'
pods "dtf.dev/run-id=$id" >"$work/pods"
cat "$work/pods"
grep -Eq "^dtf-$id-0-[a-z0-9]{5} 0 Running$" "$work/pods" \
  || fail "pod names: $(cat "$work/pods")"
kubectl --namespace=default get pods --selector="dtf.dev/run-id=$id" \
  --output=json >"$work/pods.json"
grep -q '"app.kubernetes.io/managed-by": "dtf"' "$work/pods.json" \
  || fail "the pods lack the template's labels"
ps_pod="$(awk '$2 == 0 {print $1}' "$work/pods")"
[[ "$(kubectl --namespace=default exec "$ps_pod" --container=dtf -- \
  /usr/bin/dtf --version)" == "$("$dtf" --version)" ]] \
  || fail "exec /usr/bin/dtf --version"
deadline=$((SECONDS + 30))
until grep -q 'ps:0: serving on 127.0.0.1:' <(kubectl --namespace=default \
    logs "$ps_pod" --container=dtf --tail=5); do
  ((SECONDS < deadline)) || fail "no ps:0 serving in its log"
  sleep 0.2
done
kubectl --namespace=default logs "$ps_pod" --container=gen-records \
  --tail=10 >"$work/gen.log"
grep -q 'gen-records:' "$work/gen.log" || fail "no gen-records log"
kubectl --namespace=default get jobs.batch,services,configmaps,secrets,pods \
  --selector="dtf.dev/run-id=$id" --output=wide | tee "$work/wide"
grep -q "^job.batch/dtf-$id " "$work/wide" || fail "no Job in the table"
kubectl --namespace=default delete jobs.batch,services,configmaps,secrets \
  --selector="dtf.dev/run-id=$id" --ignore-not-found | tee "$work/delete.out"
grep -q "^job.batch \"dtf-$id\" deleted$" "$work/delete.out" \
  || fail "delete printed $(cat "$work/delete.out")"
nothing_left census

# --- 2. a hand-written Job over a ConfigMap ------------------------------------
mkdir -p "$work/shell"
printf 'a\0b\377\n' >"$work/blob"
cat >"$work/shell/configmap.yaml" <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: shell-files
  namespace: default
  labels: {run: shell}
data:
  text: "hello\n"
binaryData:
  blob: "$(base64 -w0 "$work/blob")"
YAML
cat >"$work/shell/job.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: shell
  namespace: default
  labels: {run: shell}
spec:
  completionMode: Indexed
  completions: 3
  parallelism: 3
  backoffLimitPerIndex: 1
  maxFailedIndexes: 0
  podReplacementPolicy: Failed
  template:
    metadata:
      labels: {run: shell}
    spec:
      restartPolicy: Never
      containers:
      - name: sh
        image: busybox
        command: ["/bin/sh", "-c"]
        args:
        - |
          echo "index $JOB_COMPLETION_INDEX"
          for i in 1 2 3 4 5; do echo "line $i"; done
          [ "$JOB_COMPLETION_INDEX" = 2 ] && exit 0
          exec sleep 600
        volumeMounts:
        - {name: files, mountPath: /etc/files, readOnly: true}
        - {name: scratch, mountPath: /scratch}
      volumes:
      - {name: files, configMap: {name: shell-files}}
      - {name: scratch, emptyDir: {}}
YAML
kubectl --namespace=default apply --filename "$work/shell" >/dev/null
wait_phases run=shell $'0 Running\n1 Running\n2 Succeeded'
pods run=shell >"$work/pods"
p0="$(awk '$2 == 0 {print $1}' "$work/pods")"
p1="$(awk '$2 == 1 {print $1}' "$work/pods")"
p2="$(awk '$2 == 2 {print $1}' "$work/pods")"
groups="$(group_of "$p0"),$(group_of "$p1")"
root="$cluster/pods/$p0/root"
[[ "$(readlink "$root/etc/files/blob")" == ..data/blob ]] || fail "blob is no link to ..data/blob"
cmp "$root/etc/files/blob" "$work/blob" || fail "binaryData projected wrong"
[[ "$(cat "$root/etc/files/text")" == hello ]] || fail "data projected wrong"
# exec: the pod's paths and environment, binary-clean output, its status.
kubectl --namespace=default exec "$p0" --container=sh -- cat /etc/files/blob \
  >"$work/blob.exec"
cmp "$work/blob" "$work/blob.exec" || fail "exec output is not binary-clean"
rc=0
kubectl --namespace=default exec "$p1" --container=sh -- /bin/sh -c \
  'echo "$JOB_COMPLETION_INDEX"; exit 7' >"$work/exec.out" || rc=$?
[[ $rc -eq 7 && "$(cat "$work/exec.out")" == 1 ]] \
  || fail "exec: exit $rc, $(cat "$work/exec.out")"
kubectl --namespace=default exec "$p1" --container=sh -- touch /scratch/mark
[[ -f "$cluster/pods/$p1/root/scratch/mark" ]] || fail "exec's path not in the pod"
[[ "$(kubectl --namespace=default logs "$p1" --container=sh --tail=2)" \
   == $'line 4\nline 5' ]] || fail "logs --tail=2"
rc=0
kubectl --namespace=default exec "$p2" --container=sh -- true 2>"$work/err" || rc=$?
[[ $rc -ne 0 ]] && grep -q 'completed pod; current phase is Succeeded' "$work/err" \
  || fail "exec into a Succeeded pod: exit $rc, $(cat "$work/err")"
# Index 0 killed once: replaced (backoffLimitPerIndex 1).
kill -KILL -- "-$(group_of "$p0")"
wait_phases run=shell $'0 Failed\n0 Running\n1 Running\n2 Succeeded'
p0b="$(pods run=shell | awk '$2 == 0 && $3 == "Running" {print $1}')"
[[ "$p0b" != "$p0" ]] || fail "no new pod for index 0"
# Killed again: the index has failed twice, the Job fails and index 1's
# pod is stopped and removed.
groups="$groups,$(group_of "$p0b")"
kill -KILL -- "-$(group_of "$p0b")"
wait_phases run=shell $'0 Failed\n0 Failed\n2 Succeeded'
kubectl --namespace=default get jobs.batch --selector=run=shell \
  --output=wide >"$work/wide"
grep -q Failed "$work/wide" || fail "the Job is not Failed"
# (A zombie does not count: init reaps it in its own time.)
left="$(ps -e -o pid=,pgid=,stat=,args= | awk -v groups=",$groups," \
  'index(groups, "," $2 ",") && $3 !~ /^Z/')"
[[ -z "$left" ]] || fail "the failed Job's pods still run: $left"
kubectl --namespace=default delete jobs.batch,configmaps --selector=run=shell \
  --ignore-not-found >/dev/null
nothing_left shell
echo "PASS: process_cluster"
