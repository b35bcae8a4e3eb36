#!/usr/bin/env bash
# tests/scale/scale_64.sh DTF SHARED_DIR WORK_DIR [WORKERS PS CORES]
#
# A run of 64 workers and 8 parameter servers (WORKERS, PS) of a tiny model
# (a 3-feature MLP on UCI Adult, 40 sync steps of batch 32), every task a
# `dtf serve` process on loopback in a CPU cgroup of its own, held to CORES
# cores (default 0.05; cgroup v1 cpu.cfs_quota_us or v2 cpu.max):
#   1. every task starts and the chief trains to the end: every process
#      exits 0, the chief's metrics say 40 steps, every worker printed its
#      summary and its first step;
#   2. nothing is left: no `dtf serve` of the run alive, every cgroup empty;
#   3. the figures bench/scale reads are in the logs: each worker's time to
#      its first step and heartbeat CPU, the coordinator's CPU, each PS's
#      sync barrier waits (printed as a table at the end).
# Needs root (cgroups). WORK_DIR keeps every task's log (WORK/logs).
set -euo pipefail

if [[ $# -ne 3 && $# -ne 6 ]]; then
  echo "usage: $0 DTF SHARED_DIR WORK_DIR [WORKERS PS CORES]" >&2
  exit 2
fi
dtf="$(realpath "$1")"
shared="$(realpath "$2")"
work="$3"
workers="${4:-64}"
ps="${5:-8}"
cores="${6:-0.05}"
period_us=100000
deadline_s=420
rm -rf "$work"
mkdir -p "$work/logs"
work="$(realpath "$work")"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

(( EUID == 0 )) || fail "needs root: every task gets a cgroup of its own"

# ------------------------------------------------------------- cgroups

cg_tag="dtf-scale-$$"
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
  cg_version=2
  cg_root="/sys/fs/cgroup/$cg_tag"
  grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control ||
    echo +cpu > /sys/fs/cgroup/cgroup.subtree_control
  mkdir "$cg_root"
  echo +cpu > "$cg_root/cgroup.subtree_control"
elif [[ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]]; then
  cg_version=1
  cg_root="/sys/fs/cgroup/cpu/$cg_tag"
  mkdir "$cg_root"
else
  fail "no cpu cgroup controller (neither v1 /sys/fs/cgroup/cpu nor v2)"
fi
quota_us=$(awk -v c="$cores" -v p="$period_us" 'BEGIN { printf "%d", c * p }')

cg_procs() { cat "$cg_root"/*/cgroup.procs 2> /dev/null || true; }

cleanup() {
  local rc=$? sig pids
  trap - EXIT
  for sig in TERM KILL; do
    pids="$(cg_procs | tr '\n' ' ')"
    [[ -n "${pids// /}" ]] || break
    echo "ending what is left: $pids" >&2
    # shellcheck disable=SC2086  # a list of pids
    kill -s "$sig" $pids 2> /dev/null || true
    sleep 2
  done
  rmdir "$cg_root"/* "$cg_root" 2> /dev/null || true
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# new_cgroup NAME: a cgroup held to CORES.
new_cgroup() {
  mkdir "$cg_root/$1"
  if ((cg_version == 2)); then
    echo "$quota_us $period_us" > "$cg_root/$1/cpu.max"
  else
    echo "$period_us" > "$cg_root/$1/cpu.cfs_period_us"
    echo "$quota_us" > "$cg_root/$1/cpu.cfs_quota_us"
  fi
}

# ---------------------------------------------------------------- the job

cat > "$work/dtf.toml" <<EOF
[data]
csv = { train = ["$shared/data/adult/adult.data"], eval = ["$shared/data/adult/adult.test"] }
header = false
records = "records"
shards = 8
compression = "none"

[schema]
missing = ["?"]
label = { column = "income", map = { "<=50K" = 0, ">50K" = 1, "<=50K." = 0, ">50K." = 1 } }
columns = ["age:int", "workclass:str", "fnlwgt:int", "education:str",
  "education_num:int", "marital_status:str", "occupation:str",
  "relationship:str", "race:str", "gender:str", "capital_gain:int",
  "capital_loss:int", "hours_per_week:int", "native_country:str", "income:str"]

[[features.numeric]]
name = "age"
normalize = true

[[features.numeric]]
name = "education_num"
normalize = true

[[features.numeric]]
name = "hours_per_week"
normalize = true

[model]
type = "mlp"
hidden = [8]
loss = "binary_crossentropy"

[train]
mode = "sync"
batch_size = 32
steps = 40
seed = 42
threads = 1
log_every_steps = 0
output_dir = "out"
EOF
"$dtf" gen-records --job "$work/dtf.toml" > "$work/gen-records.log" 2>&1 ||
  { cat "$work/gen-records.log" >&2; fail "dtf gen-records"; }
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/secret"
chmod 600 "$work/secret"

# Free ports on loopback, one a task (bound together, then released).
mapfile -t ports < <(python3 - "$((ps + workers))" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in socks))
PY
)
ps_list="" worker_list=""
for ((i = 0; i < ps; i++)); do ps_list+="${ps_list:+,}127.0.0.1:${ports[i]}"; done
for ((i = 0; i < workers; i++)); do
  worker_list+="${worker_list:+,}127.0.0.1:${ports[ps + i]}"
done
run_id="scale-$$"

# ---------------------------------------------------------------- the run

# start NAME ROLE INDEX: the task in its own cgroup, in the background; its
# output in WORK/logs/NAME.log, the CPU seconds it used ("user system") in
# WORK/logs/NAME.cpu once it ends.
pids=() names=()
start() {
  local name="$1" role="$2" index="$3" procs
  new_cgroup "$name"
  procs="$cg_root/$name/cgroup.procs"
  bash -c '
    echo $$ > "$1" || exit 125
    cpu="$2"; shift 2
    "$@"; rc=$?
    times > "$cpu.times"
    awk "NR == 2 { for (i = 1; i <= 2; i++) { split(\$i, a, /[ms]/);
      s[i] = a[1] * 60 + a[2] } print s[1], s[2] }" "$cpu.times" > "$cpu"
    exit $rc' start "$procs" "$work/logs/$name.cpu" \
    "$dtf" serve --job "$work/dtf.toml" --role "$role" --index "$index" \
    --ps "$ps_list" --workers "$worker_list" --run-id "$run_id" \
    --secret-file "$work/secret" --threads 1 \
    --metrics-out "$work/metrics.json" > "$work/logs/$name.log" 2>&1 &
  pids+=($!)
  names+=("$name")
}

t0=$(date +%s.%N)
for ((i = 0; i < ps; i++)); do start "ps-$i" ps "$i"; done
for ((i = 0; i < workers; i++)); do start "worker-$i" worker "$i"; done
echo "started $ps parameter servers and $workers workers ($cores cores each," \
  "cgroup v$cg_version)"

end=$(( SECONDS + deadline_s ))
failed=()
for i in "${!pids[@]}"; do
  while kill -0 "${pids[i]}" 2> /dev/null && (( SECONDS < end )); do sleep 0.5; done
  if kill -0 "${pids[i]}" 2> /dev/null; then
    fail "${names[i]} still runs after $deadline_s s; logs in $work/logs"
  fi
  wait "${pids[i]}" || failed+=("${names[i]}")
done
t1=$(date +%s.%N)
if ((${#failed[@]})); then
  for n in "${failed[@]:0:3}"; do
    echo "--- $n" >&2
    tail -n 15 "$work/logs/$n.log" >&2
  done
  fail "${#failed[@]} task(s) failed: ${failed[*]}"
fi
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
echo "ok: all $((ps + workers)) tasks exited 0 in $wall s"

# ------------------------------------------------------------------ checks

steps=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["steps"]))' \
  "$work/metrics.json")
[[ "$steps" == 40 ]] || fail "the chief's metrics say $steps steps, not 40"
for ((i = 0; i < workers; i++)); do
  grep -q "^worker:$i: [0-9]* examples in" "$work/logs/worker-$i.log" ||
    fail "worker-$i printed no summary"
done
echo "ok: the chief trained 40 steps; every worker printed its summary"

left="$(pgrep -f -- "--run-id $run_id" || true)"
[[ -z "$left" ]] || fail "processes of the run left: $left"
[[ -z "$(cg_procs)" ]] || fail "cgroups not empty: $(cg_procs | tr '\n' ' ')"
echo "ok: no dtf serve of the run left, every cgroup empty"

# The figures: from each task's log (lines the runtime writes) and CPU.
python3 - "$work" "$workers" "$ps" "$wall" <<'PY' | tee "$work/figures.txt"
import json, re, statistics, sys
work, workers, ps, wall = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])

def log(name):
    return open(f"{work}/logs/{name}.log", errors="replace").read()

def cpu(name):
    u, s = open(f"{work}/logs/{name}.cpu").read().split()
    return float(u) + float(s)

def grab(pattern, text):
    m = re.search(pattern, text)
    return [float(g) for g in m.groups()] if m else None

first, hb_cpu, hb_sent = [], [], []
for i in range(workers):
    t = log(f"worker-{i}")
    v = grab(r"first step ([0-9.]+) s after start", t)
    if v: first.append(v[0])
    v = grab(r"heartbeats: (\d+) sent, ([0-9.]+) ms CPU", t)
    if v: hb_sent.append(v[0]); hb_cpu.append(v[1])
chief = log("worker-0")
coord = grab(r"coordinator: (\d+) heartbeats, ([0-9.]+) ms CPU", chief)
waits = []
for i in range(ps):
    v = grab(r"sync barrier: (\d+) waits, p50 ([0-9.]+) ms, p99 ([0-9.]+) ms", log(f"ps-{i}"))
    if v: waits.append(v)
q = lambda xs, p: statistics.quantiles(xs, n=100)[p - 1] if len(xs) > 1 else (xs[0] if xs else float("nan"))
fig = {
    "workers": workers, "ps": ps, "wall_seconds": wall,
    "first_step_seconds": {"p50": q(first, 50), "max": max(first, default=float("nan")), "count": len(first)},
    "heartbeat_cpu_ms_per_worker": statistics.mean(hb_cpu) if hb_cpu else None,
    "heartbeats_per_worker": statistics.mean(hb_sent) if hb_sent else None,
    "coordinator_cpu_ms_per_worker": coord[1] / max(1, workers + ps - 1) if coord else None,
    "coordinator_heartbeats": coord[0] if coord else None,
    "chief_cpu_s": cpu("worker-0"),
    "worker_cpu_s_median": statistics.median(cpu(f"worker-{i}") for i in range(1, workers)) if workers > 1 else None,
    "ps_cpu_s_median": statistics.median(cpu(f"ps-{i}") for i in range(ps)) if ps else None,
    "sync_barrier_wait_ms": {"p50_median_over_ps": statistics.median(w[1] for w in waits) if waits else None,
                             "p99_max_over_ps": max((w[2] for w in waits), default=None),
                             "waits": sum(w[0] for w in waits)},
}
json.dump(fig, open(f"{work}/figures.json", "w"), indent=1)
print(f"time to first step: p50 {fig['first_step_seconds']['p50']:.2f} s, max {fig['first_step_seconds']['max']:.2f} s ({len(first)} workers)")
if hb_cpu:
    print(f"heartbeats: {fig['heartbeats_per_worker']:.0f} per worker, {fig['heartbeat_cpu_ms_per_worker']:.1f} ms CPU per worker")
if coord:
    print(f"coordinator: {coord[0]:.0f} heartbeats, {coord[1]:.1f} ms CPU in its handlers, {fig['coordinator_cpu_ms_per_worker']:.2f} ms per task")
print(f"CPU: chief {fig['chief_cpu_s']:.2f} s, worker median {fig['worker_cpu_s_median']:.2f} s, ps median {fig['ps_cpu_s_median']:.2f} s")
if waits:
    b = fig["sync_barrier_wait_ms"]
    print(f"sync barrier wait: p50 {b['p50_median_over_ps']:.1f} ms (median over PS), p99 {b['p99_max_over_ps']:.1f} ms (worst PS), {b['waits']:.0f} waits")
PY
