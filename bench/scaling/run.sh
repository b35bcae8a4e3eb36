#!/usr/bin/env bash
# bench/scaling/run.sh [--quick] [--dtf PATH] [--build DIR] [--work DIR]
#   [--workers 1,2,4,8] [--modes sync,async,allreduce] [--models census,heavy]
#   [--cores W] [--ps-cores P] [--ps N] [--rate 10gbit] [--period-us N]
#   [--epochs E] [--heavy-epochs E] [--tf-steps S] [--heavy-tf-steps S]
#   [--only dtf,tf] [--timeout SECONDS] [--wait-idle SECONDS]
#   [--train-set 'KEY = VALUE']...
#
# Weak scaling of dtf on emulated hosts: every task runs as its own host, a
# network namespace joined by a veth pair to a bridge, its link shaped by tc
# tbf (--rate, both directions) and its CPU held to a cgroup quota (--cores
# for a worker or the one process, --ps-cores for a parameter server or
# TensorFlow's coordinator). See tests/testing/netns_hosts.sh.
#
# For each model (census: examples/census/dtf.toml; heavy: the same with
# hidden = [1024, 1024]) it runs, one after the other:
# - one `dtf train` process (one compute thread) at --cores: the baseline;
# - dtf PS sync, PS async and allreduce (Gloo) clusters of N workers (and
#   --ps parameter servers in the PS modes), every task `dtf serve` with one
#   compute thread, each N of --workers;
# - TensorFlow's ParameterServerStrategy (ClusterCoordinator, async; its
#   coordinator on a host of its own) and MultiWorkerMirroredStrategy
#   (RING) on the same hosts: bench/cluster_train's peers.
# Each dtf worker trains E x N epochs of its 1/N of the data (E: --epochs,
# --heavy-epochs), as much as the one process in E epochs. The clusters
# evaluate once, at the end (the accuracy column); the one process too.
#
# Prints, per model, examples/s of each mode and worker count, weak-scaling
# efficiency (examples/s of N workers / (N x one process)), the speed-up
# over TensorFlow in the same layout (dtf sync and async against
# ParameterServerStrategy, allreduce against MultiWorkerMirroredStrategy),
# the final accuracy, and whether the quotas held (the cgroups' cpu.stat
# throttling and the CPU each host used against its quota). Writes
# WORK/results.json and bench/scaling/scaling.png (efficiency against
# workers, one line per mode and model).
#
# About 30 minutes, most of it TensorFlow's processes starting under their
# quotas; --quick: workers 1,2,4, fewer epochs and TensorFlow steps (about
# 15 minutes). Needs root (namespaces, tc, cgroups).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
job_src="$repo/examples/census/dtf.toml"
TF_KERAS_VERSION="2.21.0"  # must match tf_env.sh's TensorFlow
MATPLOTLIB_VERSION="3.11.2"

dtf=""
build="$repo/build"
work=""
workers_list="1,2,4,8"
modes="sync,async,allreduce"
models="census,heavy"
cores=0.2
ps_cores=0.3
ps_count=1
rate=10gbit
period_us=100000
epochs=10
heavy_epochs=1
tf_steps=40
heavy_tf_steps=8
only="dtf,tf"
run_timeout_s=300
wait_idle_s=0
plot="$here/scaling.png"
train_sets=()

usage() {
  sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) workers_list="1,2,4"; epochs=5; tf_steps=24; heavy_tf_steps=4
             shift ;;
    --dtf) dtf="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --workers) workers_list="$2"; shift 2 ;;
    --modes) modes="$2"; shift 2 ;;
    --models) models="$2"; shift 2 ;;
    --cores) cores="$2"; shift 2 ;;
    --ps-cores) ps_cores="$2"; shift 2 ;;
    --ps) ps_count="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --period-us) period_us="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --heavy-epochs) heavy_epochs="$2"; shift 2 ;;
    --tf-steps) tf_steps="$2"; shift 2 ;;
    --heavy-tf-steps) heavy_tf_steps="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --timeout) run_timeout_s="$2"; shift 2 ;;
    --wait-idle) wait_idle_s="$2"; shift 2 ;;
    --plot) plot="$2"; shift 2 ;;
    --train-set) train_sets+=("$2"); shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done

log() { echo "bench: $*" >&2; }
source "$here/../census_job.sh"  # find_dtf, write_job, make_records
source "$here/../idle.sh"        # wait_idle
source "$here/../../tests/testing/netns_hosts.sh"

fail_usage() { echo "$*" >&2; exit 2; }
for n in ps_count epochs heavy_epochs tf_steps heavy_tf_steps run_timeout_s \
  period_us; do
  [[ "${!n}" =~ ^[1-9][0-9]*$ ]] ||
    fail_usage "--${n//_/-}: expected a positive integer, got '${!n}'"
done
for n in cores ps_cores; do
  [[ "${!n}" =~ ^[0-9]*\.?[0-9]+$ ]] ||
    fail_usage "--${n//_/-}: expected cores (e.g. 0.2), got '${!n}'"
done
[[ "$rate" =~ ^[1-9][0-9]*(gbit|mbit)$ ]] ||
  fail_usage "--rate: expected e.g. 10gbit or 1gbit, got '$rate'"
IFS=, read -r -a worker_counts <<< "$workers_list"
max_workers=0
for w in "${worker_counts[@]}"; do
  [[ "$w" =~ ^[1-9][0-9]*$ ]] && ((w <= 64)) ||
    fail_usage "--workers: expected worker counts 1..64, got '$w'"
  ((w <= max_workers)) || max_workers=$w
done
IFS=, read -r -a mode_list <<< "$modes"
for m in "${mode_list[@]}"; do
  case "$m" in sync|async|allreduce) ;; *) fail_usage "--modes: unknown $m" ;; esac
done
IFS=, read -r -a model_list <<< "$models"
for m in "${model_list[@]}"; do
  case "$m" in census|heavy) ;; *) fail_usage "--models: unknown $m" ;; esac
done
wants() { [[ ",$only," == *",$1,"* ]]; }
(( EUID == 0 )) || fail_usage "bench/scaling needs root (namespaces, tc, cgroups)"
for tool in ip tc; do
  command -v "$tool" > /dev/null || fail_usage "needs $tool (apt-get install iproute2)"
done

mkdir -p "$build"
build="$(realpath "$build")"
[[ -n "$work" ]] || work="$build/bench-scaling"
mkdir -p "$work"
work="$(realpath "$work")"

if [[ -z "$dtf" ]]; then
  dtf="$(find_dtf)"
  if [[ -z "$dtf" ]]; then
    log "building dtf"
    DTF_BUILD_DIR="$build" nice -n 19 bash "$repo/scripts/build.sh" dtf >&2
    dtf="$build/cmd/dtf"
  fi
fi
dtf="$(realpath "$dtf")"
# One copy of the binary for every run: a rebuild meanwhile mixes nothing.
cp "$dtf" "$work/dtf.bin.tmp" && mv -f "$work/dtf.bin.tmp" "$work/dtf.bin"
dtf_source="$dtf"
dtf="$work/dtf.bin"

# ------------------------------------------------------------ environments

# TensorFlow's venv (tests/interop/tf_env.sh) with tf_keras, as
# bench/cluster_train sets it up, and matplotlib for the plot.
python="$(bash "$repo/tests/interop/tf_env.sh" "$build")"
venv="$(dirname "$(dirname "$python")")"
exec 8> "$build/.venv-tf.lock"
if command -v flock > /dev/null; then flock 8; fi
for want in "tf_keras==$TF_KERAS_VERSION" "matplotlib==$MATPLOTLIB_VERSION"; do
  stamp="$venv/.dtf-${want%%=*}-stamp"
  if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    log "installing $want into $venv"
    if [[ "$want" == tf_keras* ]]; then
      "$python" -m pip install --no-deps "$want" >&2
    else
      "$python" -m pip install "$want" >&2
    fi
    echo "$want" > "$stamp"
  fi
done
exec 8>&-

# --------------------------------------------------------------- the input

write_job
# As many shards as the most workers (TensorFlow's peers give each worker
# whole shards; dtf's workers would split records otherwise).
shards=$(( max_workers > 4 ? max_workers : 4 ))
sed -i "s/^shards = .*/shards = $shards/" "$work/dtf.toml"
make_records
# --train-set: lines added to the job's [train] table (both models), e.g.
# 'overlap_communication = false' to measure without a feature.
for line in "${train_sets[@]}"; do
  [[ "$line" =~ ^[a-z_]+\ *=\ *[^=]+$ ]] ||
    fail_usage "--train-set: expected 'key = value', got '$line'"
  sed -i "s/^\[train\]\$/[train]\n$line/" "$work/dtf.toml"
done
# The compute-heavy model: the census job with hidden = [1024, 1024].
sed 's/^hidden = .*/hidden = [1024, 1024]/' "$work/dtf.toml" > "$work/heavy.toml"
cp "$work/dtf.toml" "$work/census.toml"
cat "$work"/records/*/* > /dev/null
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/secret"
chmod 600 "$work/secret"
train_rows=$("$dtf" inspect "$work"/records/train/part-* | wc -l)

# ------------------------------------------------------------------ hosts

tag="s$(printf '%04x' $(( $$ % 65536 )))"
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  hosts_teardown
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
hosts_init "$tag"
hosts_add base 0 "$rate"
for ((i = 0; i < ps_count; i++)); do hosts_add "ps$i" $((1 + i)) "$rate"; done
for ((i = 0; i < max_workers; i++)); do
  hosts_add "w$i" $((1 + ps_count + i)) "$rate"
done
log "hosts: base, ${ps_count} ps, ${max_workers} workers on bridge $HOSTS_BRIDGE;" \
  "cgroup v$HOSTS_CG_VERSION; link $rate; worker $cores cores, ps $ps_cores cores"

# ------------------------------------------------------------------- runs

# One run: RUN.hosts lists "host role cores" of every host it used; after
# it, RUN.quota holds per host: cores, wall s, periods, throttled periods,
# throttled s, user s, system s.
run_begin() {
  run="$1"
  rm -rf "$work/$run".*
  rm -rf "$work/out/$run" "$work/$run.logs"
  mkdir -p "$work/$run.logs"
  : > "$work/$run.hosts"
  run_pids=()
  (( wait_idle_s <= 0 )) || wait_idle "$wait_idle_s" > /dev/null
}

# run_task HOST CORES LABEL CMD...: CMD on HOST in the background, its output
# in RUN.logs/LABEL.log.
run_task() {
  local host="$1" c="$2" label="$3"
  shift 3
  host_quota "$host" "$c" "$period_us"
  echo "$host $label $c $(host_cpu_stat "$host")" >> "$work/$run.hosts"
  host_run "$host" "$work/$run.logs/$label.cpu" "$@" \
    > "$work/$run.logs/$label.log" 2>&1 &
  run_pids+=($!)
}

# run_wait [N]: waits for the first N tasks started (default all) to end,
# at most --timeout seconds; then ends every other task of the run. Returns
# non-zero if one failed or the time ran out.
run_wait() {
  local n="${1:-${#run_pids[@]}}" deadline=$(( SECONDS + run_timeout_s ))
  local rc=0 i pid
  t_begin="${t_begin:-$(date +%s.%N)}"
  for ((i = 0; i < n; i++)); do
    pid="${run_pids[i]}"
    while kill -0 "$pid" 2> /dev/null && (( SECONDS < deadline )); do
      sleep 0.5
    done
    if kill -0 "$pid" 2> /dev/null; then
      log "$run: timed out after $run_timeout_s s"
      rc=1
      break
    fi
    wait "$pid" || rc=1
  done
  local t_end
  t_end=$(date +%s.%N)
  # The tasks left (TensorFlow's servers, or all of them after a failure).
  for ((i = n; i < ${#run_pids[@]}; i++)); do
    kill -0 "${run_pids[i]}" 2> /dev/null || continue
    if (( rc == 0 )); then
      sleep 2  # a dtf PS exits on its own once told the run is over
    fi
    break
  done
  hosts_kill
  for pid in "${run_pids[@]}"; do wait "$pid" 2> /dev/null || true; done
  local host label c p0 t0 us0 p1 t1 us1
  while read -r host label c p0 t0 us0; do
    read -r p1 t1 us1 < <(host_cpu_stat "$host")
    local cpu="0 0"
    [[ -s "$work/$run.logs/$label.cpu" ]] && cpu="$(cat "$work/$run.logs/$label.cpu")"
    echo "$host $label $c $(awk -v a="$t_begin" -v b="$t_end" \
      'BEGIN { printf "%.3f", b - a }') $((p1 - p0)) $((t1 - t0)) \
      $(awk -v u=$((us1 - us0)) 'BEGIN { printf "%.3f", u / 1e6 }') $cpu"
  done < "$work/$run.hosts" > "$work/$run.quota"
  echo "$rc" > "$work/$run.rc"
  unset t_begin
  return "$rc"
}

job_of() { echo "$work/$1.toml"; }
epochs_of() { [[ "$1" == heavy ]] && echo "$heavy_epochs" || echo "$epochs"; }

# RUN.toml: MODEL's job for this run: its own output directory, one
# compute thread on the CPU, evaluation once, at the end.
run_job() {
  sed '/^output_dir = /d' "$(job_of "$1")" |
    sed "/^\[train\]\$/a output_dir = \"$work/out/$run\"\\
eval_every_steps = 1000000000\\
log_every_steps = 0\\
threads = 1\\
device = \"cpu\"" > "$work/$run.toml"
  echo "$work/$run.toml"
}

dtf_one() {
  local model="$1"
  run_begin "dtf-$model-one"
  log "$run: one dtf process, $cores cores"
  t_begin=$(date +%s.%N)
  run_task base "$cores" train "$dtf" train --job "$(run_job "$model")" \
    --threads 1 --epochs "$(epochs_of "$model")" --restart \
    --metrics-out "$work/$run.json"
  run_wait || tail -5 "$work/$run.logs/train.log" >&2
}

dtf_cluster() {
  local model="$1" mode="$2" n="$3" i ps="" wk="" mode_set=() role
  run_begin "dtf-$model-$mode-$n"
  log "$run: $n workers"
  if [[ "$mode" != allreduce ]]; then
    for ((i = 0; i < ps_count; i++)); do ps+="${ps:+,}$(host_ip "ps$i"):7100"; done
  fi
  for ((i = 0; i < n; i++)); do wk+="${wk:+,}$(host_ip "w$i"):7100"; done
  local cluster=(--workers "$wk")
  [[ -z "$ps" ]] || cluster+=(--ps "$ps")
  local job sets=(--set "train.mode=$mode"
    --set "train.epochs=$(( $(epochs_of "$model") * n ))")
  job="$(run_job "$model")"
  t_begin=$(date +%s.%N)
  for ((i = 0; i < n; i++)); do
    local extra=()
    ((i > 0)) || extra=(--metrics-out "$work/$run.json")
    run_task "w$i" "$cores" "worker-$i" "$dtf" serve --job "$job" \
      --role worker --index "$i" "${cluster[@]}" --run-id "$run" \
      --secret-file "$work/secret" --threads 1 --quiet "${sets[@]}" "${extra[@]}"
  done
  if [[ -n "$ps" ]]; then
    for ((i = 0; i < ps_count; i++)); do
      run_task "ps$i" "$ps_cores" "ps-$i" "$dtf" serve --job "$job" \
        --role ps --index "$i" "${cluster[@]}" --run-id "$run" \
        --secret-file "$work/secret" --threads 1 --quiet "${sets[@]}"
    done
  fi
  # The workers end the run; the parameter servers follow.
  run_wait "$n" || tail -5 "$work/$run.logs/worker-0.log" >&2
}

tf_steps_of() { [[ "$1" == heavy ]] && echo "$heavy_tf_steps" || echo "$tf_steps"; }

# TensorFlow's ParameterServerStrategy: its servers on the ps and worker
# hosts, the coordinator (which schedules every step) on the base host at
# --ps-cores. An epoch is S x N steps (S: --tf-steps), one warm-up epoch.
tf_ps() {
  local model="$1" n="$2" i cluster ps="" wk=""
  run_begin "tf-$model-ps-$n"
  log "$run: TensorFlow ParameterServerStrategy, $ps_count ps + $n workers"
  for ((i = 0; i < ps_count; i++)); do ps+="${ps:+,}\"$(host_ip "ps$i"):7200\""; done
  for ((i = 0; i < n; i++)); do wk+="${wk:+,}\"$(host_ip "w$i"):7200\""; done
  cluster="{\"chief\": [\"$(host_ip base):7300\"], \"ps\": [$ps], \"worker\": [$wk]}"
  t_begin=$(date +%s.%N)
  run_task base "$ps_cores" coordinator env TF_USE_LEGACY_KERAS=1 \
    "DTF_BENCH_CLUSTER=$cluster" "$python" "$here/tf_peer.py" ps \
    --job "$(job_of "$model")" --ps "$ps_count" --workers "$n" \
    --batch-size 256 --epoch-steps $(( $(tf_steps_of "$model") * n )) \
    --warmup-epochs 1 --epochs 2 --threads 1
  for ((i = 0; i < ps_count; i++)); do
    run_task "ps$i" "$ps_cores" "ps-$i" env TF_USE_LEGACY_KERAS=1 "$python" \
      "$repo/bench/cluster_train/tf_ps_peer.py" --serve --cluster "$cluster" \
      --task-type ps --task-index "$i" --threads 1
  done
  for ((i = 0; i < n; i++)); do
    run_task "w$i" "$cores" "worker-$i" env TF_USE_LEGACY_KERAS=1 "$python" \
      "$repo/bench/cluster_train/tf_ps_peer.py" --serve --cluster "$cluster" \
      --task-type worker --task-index "$i" --threads 1
  done
  run_wait 1 || tail -5 "$work/$run.logs/coordinator.log" >&2
}

# TensorFlow's MultiWorkerMirroredStrategy: N workers, S steps of each an
# epoch.
tf_mwms() {
  local model="$1" n="$2" i wk=""
  run_begin "tf-$model-mwms-$n"
  log "$run: TensorFlow MultiWorkerMirroredStrategy, $n workers"
  for ((i = 0; i < n; i++)); do wk+="${wk:+,}\"$(host_ip "w$i"):7200\""; done
  t_begin=$(date +%s.%N)
  for ((i = 0; i < n; i++)); do
    run_task "w$i" "$cores" "worker-$i" env TF_USE_LEGACY_KERAS=1 \
      "TF_CONFIG={\"cluster\": {\"worker\": [$wk]}, \"task\": {\"type\": \"worker\", \"index\": $i}}" \
      "$python" "$repo/bench/cluster_train/tf_mwms_peer.py" --worker "$i" \
      --job "$(job_of "$model")" --workers "$n" --batch-size 256 \
      --epoch-steps "$(tf_steps_of "$model")" --warmup-epochs 1 --epochs 2 \
      --threads 1
  done
  run_wait || tail -5 "$work/$run.logs/worker-0.log" >&2
}

log "dtf: $dtf_source (copied to $dtf); work: $work; train rows: $train_rows"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
started=$SECONDS
for model in "${model_list[@]}"; do
  if wants dtf; then
    dtf_one "$model" || true
    for mode in "${mode_list[@]}"; do
      for n in "${worker_counts[@]}"; do dtf_cluster "$model" "$mode" "$n" || true; done
    done
  fi
  if wants tf; then
    if [[ ",$modes," == *,sync,* || ",$modes," == *,async,* ]]; then
      for n in "${worker_counts[@]}"; do tf_ps "$model" "$n" || true; done
    fi
    if [[ ",$modes," == *,allreduce,* ]]; then
      for n in "${worker_counts[@]}"; do tf_mwms "$model" "$n" || true; done
    fi
  fi
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
log "all runs: $(( SECONDS - started )) s"

export work cores ps_cores ps_count rate period_us epochs heavy_epochs models \
  modes workers_list load_before load_after dtf_source plot train_rows \
  HOSTS_CG_VERSION
"$python" "$here/report.py"
