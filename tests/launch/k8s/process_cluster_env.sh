# Sourced by the tests that run pods under process_cluster.py, the kubectl
# stand-in that runs a run's pods as local processes.
#
# process_cluster_start DTF SOURCE_DIR BUILD_DIR SHARED_DIR DATA NAME
#   Sets dtf, src, build, shared (absolute), python (the venv of
#   k8s_env.sh), work (a new /tmp/NAME.XXXXXX) and cluster (the stand-in's
#   state, $work/cluster); puts a `kubectl` running the stand-in first on
#   PATH, each call logged to $work/kubectl.log; sources e2e_lib.sh.
#   Exits 77 (skipped) when SHARED_DIR/DATA or the venv is missing. On exit,
#   whatever the outcome, every object left in the stand-in is deleted (its
#   pods stopped) and $work removed.
#
# Then, for the run whose id is in $id:
#   pods           "name index phase" per pod (the stand-in's Job
#                  controller runs first: a failed pod is replaced there)
#   job_condition  the Job's condition ("" while it runs)
#   log_of NAME    the dtf container's log of pod NAME on this machine
#   kill_pod NAME  SIGKILL to the process group of pod NAME
#   die WHAT       fails, with the pods' phases and the last lines of their
#                  logs and of $work/*.err
process_cluster_start() {
  dtf="$(realpath "$1")" src="$(realpath "$2")" build="$3"
  shared="$(realpath "$4")"
  source "$src/tests/e2e/e2e_lib.sh"
  if [[ ! -f "$shared/$5" ]]; then
    echo "SKIP: no $shared/$5" >&2
    exit 77
  fi
  python="$(bash "$src/tests/launch/k8s_env.sh" "$build")" || {
    echo "SKIP: no venv with PyYAML" >&2
    exit 77
  }
  work="$(mktemp -d "/tmp/$6.XXXXXX")"
  cluster="$work/cluster"
  export DTF_PROCESS_CLUSTER="$cluster" DTF_PROCESS_CLUSTER_DTF="$dtf"
  mkdir -p "$work/bin"
  cat >"$work/bin/kubectl" <<SH
#!/bin/sh
echo "\$*" >>"$work/kubectl.log"
exec "$python" "$src/tests/launch/k8s/process_cluster.py" "\$@"
SH
  chmod +x "$work/bin/kubectl"
  export PATH="$work/bin:$PATH"
  trap process_cluster_cleanup EXIT
}

process_cluster_cleanup() {
  local rc=$?
  kubectl delete jobs.batch,services,configmaps,secrets --ignore-not-found \
    >/dev/null 2>&1 || true
  rm -rf "$work"
  exit $rc
}

pods() {
  nice kubectl get pods --selector="dtf.dev/run-id=$id" --output=json |
    "$python" -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    m = p["metadata"]
    print(m["name"], m["annotations"]["batch.kubernetes.io/job-completion-index"],
          p["status"]["phase"])'
}

job_condition() {
  nice kubectl get jobs.batch --selector="dtf.dev/run-id=$id" --output=json |
    "$python" -c '
import json, sys
for j in json.load(sys.stdin)["items"]:
    for c in j.get("status", {}).get("conditions", []):
        print(c["type"])'
}

log_of() { echo "$cluster/pods/$1/dtf.log"; }

kill_pod() {
  local group
  group="$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["pid"])' \
    "$cluster/pods/$1/pod.json")"
  [[ "$group" -gt 1 ]] || die "no process group for $1"
  kill -KILL -- "-$group"
}

die() {
  echo "--- pods" >&2
  pods >&2 || true
  show_tail "$cluster"/pods/*/*.log "$work"/*.err
  fail "$@"
}
