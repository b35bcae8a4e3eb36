"""The fault matrix: runs of a real job under one fault each, on the local,
SSH, Slurm and Kubernetes backends and on the SSH backend across two
network namespaces whose link is cut (bench/faults/run.sh sets up the job,
the hosts, the Slurm cluster, the Kubernetes stand-in and the small file
system; see bench/README.md). A Kubernetes run is the cluster's once
applied: k8s.py drives it by its Job and pods.

Each run: `dtf launch` in the foreground with a profile written for the
cell, the fault injected once the chief's global step (`dtf status --json`)
reaches --fault-step, then the run watched until its launcher exits, and
for the cells that call for it continued with `dtf launch --resume`.
Recorded per run: the outcome (completed, or failed and the launcher's last
line), the final accuracy (--metrics-out), the time to recover (from the
fault to the global step advancing again, or to the launcher's exit when
the run fails), the processes (and Slurm jobs) left once the launcher is
gone, and the checkpoint generations in the output directory that still
read back whole (magic, CRC-32C, the run's own id).
"""
import argparse
import json
import os
import platform
import re
import sys
import time

from cells import cells
from k8s import K8sRunner
from runner import Runner
from summary import summarize, table


def arguments():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtf", required=True)
    ap.add_argument("--job", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--ssh-dir", required=True)
    ap.add_argument("--tiny", required=True)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--ssh-runs", type=int, default=1)
    ap.add_argument("--slurm-runs", type=int, default=1)
    ap.add_argument("--net-runs", type=int, default=1)
    ap.add_argument("--k8s-runs", type=int, default=1)
    ap.add_argument("--net-link", default="")
    ap.add_argument("--cells", default="")
    ap.add_argument("--ps", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--grace", type=int, default=5)
    ap.add_argument("--fault-step", type=int, default=1200)
    ap.add_argument("--freeze-steps", type=int, default=1200)
    ap.add_argument("--cell-timeout", type=int, default=180)
    ap.add_argument("--drain-timeout", type=int, default=60)
    ap.add_argument("--no-ssh", action="store_true")
    ap.add_argument("--no-slurm", action="store_true")
    ap.add_argument("--no-net", action="store_true")
    ap.add_argument("--no-k8s", action="store_true")
    # The Kubernetes stand-in's state directory (DTF_PROCESS_CLUSTER), and
    # how often its Job controller runs (a `kubectl get`).
    ap.add_argument("--k8s-cluster", default="")
    ap.add_argument("--k8s-tick", type=float, default=0.5)
    return ap.parse_args()


def line(cell, i, r):
    acc = "-" if r.get("accuracy") is None else f"{r['accuracy']:.4f}"
    rec = r.get("recover_s")
    ck = r.get("checkpoints") or {}
    return (f"{cell.name} #{i}: {r['outcome']} acc {acc} recover "
            f"{rec if rec is not None else r.get('to_failure_s', '-')} s, "
            f"left {r.get('left')}, checkpoints {ck.get('intact')}/"
            f"{ck.get('files')}, {r['verdict']}"
            + (f" [{r['error']}]" if r.get("error") else ""))


def main():
    a = arguments()
    runner = Runner(a)
    off = {"ssh": a.no_ssh, "slurm": a.no_slurm, "net": a.no_net,
           "k8s": a.no_k8s or not a.k8s_cluster}
    chosen = [c for c in cells(a.freeze_steps)
              if (not a.cells or any(re.search(p, c.name)
                                     for p in a.cells.split(",")))
              and not off.get(c.backend)]
    if any(c.backend == "ssh" for c in chosen):
        runner.probe_ssh_restarts()
    runners = {"k8s": K8sRunner(a)}
    runs = {"local": a.runs, "ssh": a.ssh_runs, "slurm": a.slurm_runs,
            "net": a.net_runs, "k8s": a.k8s_runs}
    records = []
    for cell in chosen:
        for i in range(runs[cell.backend]):
            r = runners.get(cell.backend, runner).run(cell, i)
            records.append(r)
            print(line(cell, i, r), flush=True)
    rows = summarize(records)
    text = table(rows)
    print()
    print(text)
    results = {
        "machine": {"host": platform.node(), "cpus": os.cpu_count(),
                    "kernel": platform.release()},
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "settings": dict(vars(a)),
        "ssh_restarts_supported": runner.ssh_restarts,
        "ssh_restarts_error": runner.ssh_restarts_error,
        "summary": rows,
        "runs": records,
        "table": text,
    }
    with open(os.path.join(a.work, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    return 1 if any(r["verdict"] != "pass" for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
