"""Times dtf launch over SSH (bench/launch/run.sh sets up hosts and profiles).

For each host count: `dtf launch --profile hostsN` in the foreground, timed
from the start of the command to the launcher's note that the last task is
ready ("<task> ready at <address>"), then stopped with SIGINT (Ctrl-C) and
waited for. The first launch of a size ships everything; the second finds it
all cached. Beside it: OpenSSH's client running `true` on the same hosts at
once.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time


def launch_until_ready(dtf, job, profile, tasks):
    start = time.monotonic()
    proc = subprocess.Popen(
        [dtf, "launch", "--job", job, "--profile", profile, "--grace", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        cwd=os.path.dirname(job))
    ready = 0
    shipped = []
    ready_s = None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "shipped" in line or "already there" in line:
            shipped.append(line.strip())
        if " ready at " in line:
            ready += 1
            if ready == tasks:
                ready_s = time.monotonic() - start
                proc.send_signal(signal.SIGINT)
    proc.wait()
    if ready_s is None:
        sys.stderr.write("".join(lines[-30:]))
        raise SystemExit(f"{profile}: not every task became ready")
    uploaded = sum(1 for s in shipped if "shipped" in s)
    return ready_s, uploaded


def ssh_fanout(ssh_dir, hosts, ports):
    start = time.monotonic()
    procs = []
    for i in range(hosts):
        procs.append(subprocess.Popen(
            ["ssh", "-i", f"{ssh_dir}/id_ed25519", "-p", str(ports[i]),
             "-o", f"UserKnownHostsFile={ssh_dir}/known_hosts",
             "-o", "BatchMode=yes", "-F", "none", f"127.0.0.{i + 2}", "true"],
            stdout=subprocess.DEVNULL))
    for p in procs:
        if p.wait() != 0:
            raise SystemExit("ssh true failed")
    return time.monotonic() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtf", required=True)
    ap.add_argument("--job", required=True)
    ap.add_argument("--ssh-dir", required=True)
    ap.add_argument("--hosts", default="2,4,8")
    ap.add_argument("--ports", required=True)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    ports = [int(p) for p in a.ports.split(",")]
    results = []
    for n in (int(x) for x in a.hosts.split(",")):
        tasks = n + max(1, n // 2)
        best = {"first_s": None, "cached_s": None, "ssh_true_s": None}
        for _ in range(a.repeats):
            shutil.rmtree(os.path.join(a.work, "remote", f"n{n}"),
                          ignore_errors=True)
            first, up1 = launch_until_ready(a.dtf, a.job, f"hosts{n}", tasks)
            cached, up2 = launch_until_ready(a.dtf, a.job, f"hosts{n}", tasks)
            if up1 != n or up2 != 0:
                raise SystemExit(f"{n} hosts: shipped to {up1} then {up2}")
            fan = ssh_fanout(a.ssh_dir, n, ports)
            for key, value in (("first_s", first), ("cached_s", cached),
                               ("ssh_true_s", fan)):
                if best[key] is None or value < best[key]:
                    best[key] = value
        results.append({"hosts": n, "tasks": tasks, **best})
        print(f"{n} hosts ({tasks} tasks): first launch {best['first_s']:.1f} s, "
              f"cached {best['cached_s']:.1f} s, ssh true on all "
              f"{best['ssh_true_s']:.2f} s", flush=True)
    with open(os.path.join(a.work, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    print()
    print("| hosts | tasks | first launch to all running (s) | cached (s) |"
          " OpenSSH `true` on all hosts (s) |")
    print("|--:|--:|--:|--:|--:|")
    for r in results:
        print(f"| {r['hosts']} | {r['tasks']} | {r['first_s']:.1f} | "
              f"{r['cached_s']:.1f} | {r['ssh_true_s']:.2f} |")


if __name__ == "__main__":
    main()
