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
# census_run PROFILE_LINES...
#   Sets out ($work/out, the output volume's node path) and job ($work/job,
#   examples/census's job with profiles/k8s.toml: backend "kubernetes",
#   the lines given, and a [kubernetes] table with the data and output
#   volumes and gen_records).
# launch_run ARGS...
#   `dtf launch --profile k8s ARGS` in $job, the output on the output
#   volume; sets id (its output in $work/launch.out and launch.err).
#
# Then, for the run whose id is in $id:
#   pods           "name index phase" per pod (the stand-in's Job
#                  controller runs first: a failed pod is replaced there)
#   job_condition  the Job's condition ("" while it runs)
#   log_of NAME    the dtf container's log of pod NAME on this machine
#   kill_pod NAME  SIGKILL to the process group of pod NAME
#   die WHAT       fails, with the pods' phases and the last lines of their
#                  logs and of $work/*.err
#   wait_checkpoint FILE
#                  waits up to 300 s for FILE (on the output volume's node
#                  path) to be written, reconciling meanwhile
#   wait_job CONDITION SECONDS
#                  waits that long for the Job's condition to be CONDITION;
#                  another condition fails at once
#   no_pod_processes SECONDS
#                  waits that long for every pod process to be gone
#   nothing_left WHAT
#                  no pod process (within 15 s), no object, no pod left
#   stop_run       `dtf stop $id` in $job, then nothing_left
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

wait_checkpoint() {
  local deadline=$((SECONDS + 300))
  until [[ -s "$1" ]]; do
    ((SECONDS < deadline)) || die "no checkpoint $1 in 300 s"
    pods >/dev/null
    sleep 1
  done
}

wait_job() {
  local deadline=$((SECONDS + $2)) condition
  while :; do
    condition="$(job_condition)"
    [[ "$condition" == "$1" ]] && return 0
    [[ -z "$condition" ]] || die "the Job ended $condition, not $1"
    ((SECONDS < deadline)) || die "the Job was not $1 within $2 s"
    sleep 1
  done
}

no_pod_processes() {
  local deadline=$((SECONDS + $1)) left
  while :; do
    left="$(pgrep -a -f -- "$cluster/" || true)"
    [[ -z "$left" ]] && return 0
    ((SECONDS < deadline)) || fail "pod processes left: $left"
    sleep 0.2
  done
}

nothing_left() {
  no_pod_processes 15
  local left
  left="$(kubectl get jobs.batch,services,configmaps,secrets,pods \
    --output=json | "$python" -c '
import json, sys
for i in json.load(sys.stdin)["items"]:
    print(i["kind"] + "/" + i["metadata"]["name"])')"
  [[ -z "$left" ]] || fail "$1: objects left in the cluster: $left"
  [[ -z "$(ls "$cluster/pods")" ]] || fail "$1: pods left: $(ls "$cluster/pods")"
}

stop_run() {
  (cd "$job" && "$dtf" stop "$id" >"$work/stop.out" 2>&1) \
    || { cat "$work/stop.out" >&2; fail "dtf stop $id failed"; }
  nothing_left "dtf stop $id"
  echo "ok: dtf stop $id: no pod process, no object left"
}

census_run() {
  out="$work/out" job="$work/job"
  mkdir -p "$job/profiles" "$out"
  cp "$src/examples/census/dtf.toml" "$job/dtf.toml"
  {
    echo 'backend = "kubernetes"'
    printf '%s\n' "$@"
    cat <<TOML
[kubernetes]
image = "dtf:test"
job_dir = "/srv/k8s/examples/census"
data = { host_path = "$shared/data", mount_path = "/srv/shared/data" }
output = { host_path = "$out", mount_path = "/srv/out" }
gen_records = true
TOML
  } >"$job/profiles/k8s.toml"
}

launch_run() {
  (cd "$job" && nice "$dtf" launch --profile k8s "$@" \
     --set train.output_dir=../../../out/census \
     >"$work/launch.out" 2>"$work/launch.err") \
    || { cat "$work/launch.err" >&2; fail "dtf launch --profile k8s failed"; }
  id="$(cat "$work/launch.out")"
  [[ "$id" =~ ^[0-9a-z-]+$ ]] || fail "launch printed no run id: $id"
}
