#!/usr/bin/env python3
"""The table of bench/sharded/run.sh from its WORK/logs.

    report.py WORK BUCKETS PS WORKERS LIMIT_MB [CP_SECONDS]

Per phase (train, resume) and task: exit (code, "SIGKILL", or "oom" when
the cgroup's OOM killer ended it), peak RSS (GNU time's maximum resident
set size). Then each checkpoint write (the chief's note: MB and seconds)
and each PS restore (seconds), beside `cp` of the newest checkpoint's
bytes. Writes WORK/results.json.
"""

import glob
import json
import os
import platform
import re
import sys
import time


def peak_mb(path):
    try:
        text = open(path).read()
    except OSError:
        return None
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    return round(int(m.group(1)) / 1024, 1) if m else None


def exits(path):
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        name, rc, ooms = line.split()
        rc = int(rc)
        if int(ooms or 0) > 0:
            out[name] = "oom"
        elif rc == 137:
            out[name] = "SIGKILL"
        else:
            out[name] = str(rc)
    return out


def main():
    work, buckets, ps, workers, limit_mb = sys.argv[1:6]
    cp_s = float(sys.argv[6]) if len(sys.argv) > 6 and sys.argv[6] else None
    logs = os.path.join(work, "logs")
    rows = []
    for phase in ("train", "resume", "predict"):
        ex = exits(os.path.join(logs, f"{phase}.exits"))
        for name in sorted(ex, key=lambda n: (n.startswith("w"), n)):
            rows.append({"phase": phase, "task": name, "exit": ex[name],
                         "peak_rss_mb": peak_mb(
                             os.path.join(logs, f"{phase}-{name}.time"))})
    writes, restores = [], []
    for path in sorted(glob.glob(os.path.join(logs, "*.log"))):
        for line in open(path, errors="replace"):
            m = re.search(r"checkpoint (\S+) written: ([\d.]+) MB in ([\d.]+) s",
                          line)
            if m:
                writes.append({"prefix": os.path.basename(m.group(1)),
                               "mb": float(m.group(2)),
                               "seconds": float(m.group(3))})
            m = re.search(r"(ps:\d+): restored (\S+) in ([\d.]+) s", line)
            if m:
                restores.append({"task": m.group(1),
                                 "prefix": os.path.basename(m.group(2)),
                                 "seconds": float(m.group(3))})
    print(f"sharded checkpoints: {buckets} buckets, {ps} PS + {workers} "
          f"workers, each task limited to {limit_mb} MB")
    print(f"{'phase':8} {'task':10} {'exit':8} {'peak RSS MB':>12}")
    for r in rows:
        print(f"{r['phase']:8} {r['task']:10} {r['exit']:8} "
              f"{r['peak_rss_mb'] if r['peak_rss_mb'] is not None else '-':>12}")
    for w in writes:
        ratio = f", {w['seconds'] / cp_s:.2f}x cp" if cp_s else ""
        print(f"write {w['prefix']}: {w['mb']:.1f} MB in {w['seconds']:.2f} s"
              f"{ratio}")
    for r in restores:
        print(f"restore {r['task']} from {r['prefix']}: {r['seconds']:.2f} s")
    if cp_s is not None:
        print(f"cp of the newest checkpoint's data files: {cp_s:.2f} s")
    results = {"buckets": int(buckets), "ps": int(ps),
               "workers": int(workers), "limit_mb": int(limit_mb),
               "tasks": rows, "checkpoint_writes": writes,
               "restores": restores, "cp_seconds": cp_s,
               "machine": platform.node(), "cpus": os.cpu_count(),
               "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
