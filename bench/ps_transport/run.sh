#!/usr/bin/env bash
# bench/ps_transport/run.sh [--build DIR] [--work DIR] [--iters N] [--warmup N]
#     [--calls N] [--iperf-seconds N] [--repeats N] [--wait-idle SECONDS] [--tls]
#
# Parameter-server transport over loopback: dtf's PsService / PsClient over
# gRPC (push + pull of a 64 MiB dense variable, MB/s; latency of a 64-row
# sparse pull, p50 / p99) against raw TCP in the same run: iperf3 (one
# stream, 5 s) for throughput, and ps_transport_bench's own 64 MiB echo and
# 64-byte ping-pong. Prints a table and writes WORK/results.json.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

build="$repo/build"
work=""
iters=10
warmup=2
calls=2000
iperf_seconds=5
repeats=1
wait_idle_s=0
goal=0.5
tls=0

usage() {
  sed -n '2,3p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --calls) calls="$2"; shift 2 ;;
    --iperf-seconds) iperf_seconds="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --wait-idle) wait_idle_s="$2"; shift 2 ;;
    --tls) tls=1; shift ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done

log() { echo "bench: $*" >&2; }

[[ -n "$work" ]] || work="$build/bench-ps-transport"
mkdir -p "$work"
work="$(realpath "$work")"

# ------------------------------------------------------------ the programs

# build_bench.
source "$here/../build_bench.sh"
log "building ps_transport_bench into $build"
build_bench "$repo" "$build" ps_transport_bench >&2
bench="$build/bench/ps_transport_bench"

if ! command -v iperf3 > /dev/null; then
  log "installing iperf3 (Debian package)"
  sudo=""
  (( $(id -u) == 0 )) || sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y iperf3 >&2
fi

# ------------------------------------------------------------- the timings

# cpu_busy, busy_cores, wait_idle.
source "$here/../idle.sh"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

bench_dtf() {
  local name="$1"
  shift
  wait_idle "$wait_idle_s" > "$work/$name.busy"
  "$bench" --iters "$iters" --warmup "$warmup" --calls "$calls" \
    --json "$work/$name.json" --work "$work/tmp" "$@" > "$work/$name.log"
  cat "$work/$name.log" >&2
}

bench_iperf3() {
  local name="$1" port pid
  wait_idle "$wait_idle_s" > "$work/$name.busy"
  port=$(free_port)
  iperf3 -s -1 -p "$port" > /dev/null &
  pid=$!
  sleep 0.5
  iperf3 -c 127.0.0.1 -p "$port" -t "$iperf_seconds" -J > "$work/$name.json" ||
    { kill "$pid" 2> /dev/null; exit 1; }
  wait "$pid"
}

# --------------------------------------------------------------------- main

for ((r = 1; r <= repeats; r++)); do
  log "run $r/$repeats: ps_transport_bench ($iters iterations after $warmup, $calls calls)"
  bench_dtf "dtf-$r"
  if ((tls)); then
    log "run $r/$repeats: ps_transport_bench over mutual TLS"
    bench_dtf "dtf-tls-$r" --tls 1 --parts dense,sparse
  fi
  log "run $r/$repeats: iperf3 -c 127.0.0.1 -t $iperf_seconds"
  bench_iperf3 "iperf3-$r"
done

export work repeats iters warmup calls iperf_seconds goal
python3 - <<'PY'
import datetime
import json
import os
import platform

env = os.environ
work = env["work"]
repeats = int(env["repeats"])
goal = float(env["goal"])


def load(name):
    with open(os.path.join(work, name)) as f:
        return json.load(f)


def busy(name):
    with open(os.path.join(work, f"{name}.busy")) as f:
        return float(f.read())


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


runs = []
for r in range(1, repeats + 1):
    dtf = load(f"dtf-{r}.json")
    ip = load(f"iperf3-{r}.json")
    end = ip["end"]
    runs.append({
        "dtf": dtf,
        "dtf_busy_cores_before": busy(f"dtf-{r}"),
        "iperf3": {
            "seconds": end["sum_received"]["seconds"],
            "bytes": end["sum_received"]["bytes"],
            "mb_s": end["sum_received"]["bits_per_second"] / 8e6,
            "retransmits": end["sum_sent"].get("retransmits"),
            "cpu_utilization_percent": end.get("cpu_utilization_percent"),
            "busy_cores_before": busy(f"iperf3-{r}"),
        },
    })

# Best of the repeats, figure by figure.
best = {
    "iperf3_mb_s": max(r["iperf3"]["mb_s"] for r in runs),
    "tcp_echo_mb_s": max(r["dtf"]["tcp_bulk"]["mb_s"] for r in runs),
    "dtf_push_pull_mb_s": max(r["dtf"]["dense"]["push_pull_mb_s"] for r in runs),
    "dtf_push_mb_s": max(r["dtf"]["dense"]["push_mb_s"] for r in runs),
    "dtf_pull_mb_s": max(r["dtf"]["dense"]["pull_mb_s"] for r in runs),
    "dtf_sparse_p50_us": min(r["dtf"]["sparse"]["p50_us"] for r in runs),
    "dtf_sparse_p99_us": min(r["dtf"]["sparse"]["p99_us"] for r in runs),
    "tcp_ping_p50_us": min(r["dtf"]["tcp_ping_pong"]["p50_us"] for r in runs),
    "tcp_ping_p99_us": min(r["dtf"]["tcp_ping_pong"]["p99_us"] for r in runs),
}
ratio = best["dtf_push_pull_mb_s"] / best["iperf3_mb_s"]


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


# Each repeat's dtf / iperf3, measured minutes apart under the same load: on
# a shared machine a steadier figure than the ratio of two bests.
paired = [r["dtf"]["dense"]["push_pull_mb_s"] / r["iperf3"]["mb_s"] for r in runs]


# CPU seconds (both processes) per GB of tensor bytes moved: less sensitive
# than MB/s to other load on the machine.
def cpu_per_gb(part, bytes_moved):
    return (part["client_cpu_seconds"] + part["server_cpu_seconds"]) / (bytes_moved / 1e9)


for r in runs:
    d = r["dtf"]
    moved = 2 * d["dense"]["bytes"] * d["dense"]["iters"]
    r["dtf_cpu_s_per_gb"] = cpu_per_gb(d["dense"], moved)
    r["tcp_echo_cpu_s_per_gb"] = cpu_per_gb(d["tcp_bulk"], moved)
best["dtf_cpu_s_per_gb"] = min(r["dtf_cpu_s_per_gb"] for r in runs)
best["tcp_echo_cpu_s_per_gb"] = min(r["tcp_echo_cpu_s_per_gb"] for r in runs)
results = {
    "benchmark": "ps_transport",
    "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                "kernel": platform.release()},
    "settings": {"iters": int(env["iters"]), "warmup": int(env["warmup"]),
                 "calls": int(env["calls"]),
                 "iperf_seconds": int(env["iperf_seconds"]),
                 "repeats": repeats},
    "best": best,
    "ratios": {
        "dtf_push_pull_vs_iperf3": ratio,
        "dtf_push_pull_vs_tcp_echo":
            best["dtf_push_pull_mb_s"] / best["tcp_echo_mb_s"],
        "dtf_push_pull_vs_iperf3_per_run": paired,
        "dtf_push_pull_vs_iperf3_median_of_runs": median(paired),
        "dtf_sparse_p50_vs_tcp_ping_p50":
            best["dtf_sparse_p50_us"] / best["tcp_ping_p50_us"],
        "dtf_cpu_per_gb_vs_tcp_echo":
            best["dtf_cpu_s_per_gb"] / best["tcp_echo_cpu_s_per_gb"],
    },
    "goal": {"dtf_push_pull_vs_iperf3_at_least": goal, "met": ratio >= goal},
    "runs": runs,
}
path = os.path.join(work, "results.json")
with open(path, "w") as f:
    json.dump(results, f, indent=2)
    f.write("\n")

d0 = runs[0]["dtf"]
mib = d0["dense"]["bytes"] / (1 << 20)
print(f"ps_transport: {mib:.0f} MiB dense variable, {d0['dense']['iters']} "
      f"iterations after {d0['dense']['warmup']}; {os.cpu_count()} cores, "
      f"{cpu_model()}; best of {repeats}")
print(f"{'tool':<46} {'MB/s':>9} {'/ iperf3':>9} {'/ tcp echo':>11}")
rows = [
    ("iperf3 (raw TCP, 1 stream, one way)", best["iperf3_mb_s"]),
    ("raw TCP echo (64 MiB there and back)", best["tcp_echo_mb_s"]),
    ("dtf push + pull (PsClient <-> PsService)", best["dtf_push_pull_mb_s"]),
    ("  dtf push alone (incl. SGD apply on the PS)", best["dtf_push_mb_s"]),
    ("  dtf pull alone", best["dtf_pull_mb_s"]),
]
for name, mb_s in rows:
    print(f"{name:<46} {mb_s:>9.1f} {mb_s / best['iperf3_mb_s']:>9.2f} "
          f"{mb_s / best['tcp_echo_mb_s']:>11.2f}")
print()
print(f"{'round trip':<46} {'p50 us':>9} {'p99 us':>9}")
print(f"{'dtf sparse pull (64 rows x 8 floats of 1M)':<46} "
      f"{best['dtf_sparse_p50_us']:>9.1f} {best['dtf_sparse_p99_us']:>9.1f}")
print(f"{'raw TCP ping-pong (64 bytes)':<46} "
      f"{best['tcp_ping_p50_us']:>9.1f} {best['tcp_ping_p99_us']:>9.1f}")
print()
print(f"CPU s per GB moved (client + server): dtf {best['dtf_cpu_s_per_gb']:.2f}, "
      f"raw TCP echo {best['tcp_echo_cpu_s_per_gb']:.2f}")
print("per run (dtf push + pull / iperf3 MB/s, cores busy before): " + "; ".join(
    f"{r['dtf']['dense']['push_pull_mb_s']:.0f} / {r['iperf3']['mb_s']:.0f} = "
    f"{p:.2f} ({r['dtf_busy_cores_before']:.1f}, {r['iperf3']['busy_cores_before']:.1f})"
    for r, p in zip(runs, paired)))
verdict = "met" if ratio >= goal else "NOT met"
print(f"goal: dtf push + pull >= {goal:.0%} of raw TCP (iperf3): best / best "
      f"{ratio:.0%}, {verdict}; median of the per-run ratios {median(paired):.0%}")
print(f"results: {path}")
PY

((tls)) || exit 0
# TLS beside plaintext, repeat by repeat (each pair a few seconds apart).
export work repeats
python3 - <<'PY'
import json
import os
from statistics import median

work, repeats = os.environ["work"], int(os.environ["repeats"])
rows = []
for r in range(1, repeats + 1):
    with open(os.path.join(work, f"dtf-{r}.json")) as f:
        plain = json.load(f)
    with open(os.path.join(work, f"dtf-tls-{r}.json")) as f:
        tls = json.load(f)
    rows.append((plain["dense"]["push_pull_mb_s"], tls["dense"]["push_pull_mb_s"],
                 plain["sparse"]["p50_us"], tls["sparse"]["p50_us"]))
print()
print(f"{'mutual TLS beside plaintext':<34} {'plain':>9} {'TLS':>9} {'TLS / plain':>12}")
for plain_mb, tls_mb, plain_us, tls_us in rows:
    print(f"{'push + pull MB/s':<34} {plain_mb:>9.1f} {tls_mb:>9.1f} {tls_mb / plain_mb:>12.2f}")
    print(f"{'sparse pull p50 us':<34} {plain_us:>9.1f} {tls_us:>9.1f} {tls_us / plain_us:>12.2f}")
print(f"median TLS / plain: push + pull {median(t / p for p, t, _, _ in rows):.2f}, "
      f"sparse p50 {median(t / p for _, _, p, t in rows):.2f}")
PY