"""Elastic workers: the throughput a parameter-server run keeps when one of
its workers is lost and left out (min_workers), against its throughput
before, in the same run (bench/elastic/run.sh sets up the job and the
profile; see bench/README.md, "elastic").

Each repeat: `dtf launch` of the census job with W workers and 1 PS, every
task's process then put into a CPU cgroup of its own with a quota (a
worker --worker-cores, the PS --ps-cores: the hosts of a cluster, each
with its own cores, rather than tasks sharing this machine's), a window of
--window seconds of training measured, worker:W-1 killed (SIGKILL), the
run watched until the global step advances again, --settle seconds left
for the parameter servers to stop waiting for it, and a second window
measured. Throughput: examples/s from the chief's global step (dtf status
--json; in async mode a step is one worker's batch, in sync mode one batch
of each live worker) and the sum of the live workers' own examples/s (their
heartbeats). Writes WORK/results.json and prints a table.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

CGROUP_V1 = "/sys/fs/cgroup/cpu"


class Cgroups:
    """A CPU cgroup per task under one parent (cgroup v1 or v2)."""

    def __init__(self, tag):
        self.v2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
        root = "/sys/fs/cgroup" if self.v2 else CGROUP_V1
        self.parent = os.path.join(root, f"dtf-elastic-{tag}")
        os.makedirs(self.parent, exist_ok=True)
        if self.v2:
            with open(os.path.join(self.parent, "cgroup.subtree_control"),
                      "w") as f:
                f.write("+cpu")
        self.made = []

    def put(self, name, pid, cores, period_us=100000):
        path = os.path.join(self.parent, name.replace(":", "-"))
        os.makedirs(path, exist_ok=True)
        self.made.append(path)
        quota = int(cores * period_us)
        if self.v2:
            with open(os.path.join(path, "cpu.max"), "w") as f:
                f.write(f"{quota} {period_us}")
        else:
            with open(os.path.join(path, "cpu.cfs_period_us"), "w") as f:
                f.write(str(period_us))
            with open(os.path.join(path, "cpu.cfs_quota_us"), "w") as f:
                f.write(str(quota))
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def remove(self):
        for path in self.made + [self.parent]:
            try:
                os.rmdir(path)
            except OSError:
                pass


def status(a, run_id):
    r = subprocess.run([a.dtf, "status", run_id, "--json"], cwd=a.job_dir,
                       capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        return None
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError:
        return None


def newest_run(a, before):
    runs = os.path.join(a.job_dir, ".dtf", "runs")
    new = sorted(set(os.listdir(runs)) - before) if os.path.isdir(runs) else []
    return new[-1] if new else None


def window(a, run_id, seconds, live):
    """Samples over `seconds`: (examples/s from the global step, the sum of
    the live workers' own examples/s, mean over the samples)."""
    samples = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s = status(a, run_id)
        if s and s.get("chief", {}).get("global_step") is not None:
            rates = [t.get("examples_per_sec") or 0 for t in s["tasks"]
                     if t["task"] in live]
            samples.append((time.monotonic(), s["chief"]["global_step"],
                            sum(rates)))
        time.sleep(0.5)
    if len(samples) < 2:
        raise RuntimeError("no global step in the window")
    (t0, g0, _), (t1, g1, _) = samples[0], samples[-1]
    per_step = a.batch * (len(live) if a.mode == "sync" else 1)
    return ((g1 - g0) * per_step / (t1 - t0),
            statistics.mean(r for _, _, r in samples))


def one_repeat(a, k, groups):
    before = set(os.listdir(os.path.join(a.job_dir, ".dtf", "runs"))) \
        if os.path.isdir(os.path.join(a.job_dir, ".dtf", "runs")) else set()
    log = open(os.path.join(a.work, f"launch-{k}.err"), "w")
    p = subprocess.Popen(
        [a.dtf, "launch", "--profile", "elastic", "--grace", "3",
         "--set", f"train.mode={a.mode}",
         "--set", f"train.output_dir={a.work}/out-{k}"],
        cwd=a.job_dir, stdout=subprocess.DEVNULL, stderr=log,
        start_new_session=True)
    try:
        run_id = None
        deadline = time.monotonic() + 120
        names = [f"worker:{i}" for i in range(a.workers)]
        while time.monotonic() < deadline:
            run_id = run_id or newest_run(a, before)
            s = status(a, run_id) if run_id else None
            if s and (s.get("chief", {}).get("global_step") or 0) > 0 and all(
                    t.get("pid") for t in s["tasks"]):
                break
            if p.poll() is not None:
                raise RuntimeError(f"the launcher exited {p.returncode}")
            time.sleep(0.3)
        else:
            raise RuntimeError("the run did not start stepping")
        for t in s["tasks"]:
            cores = a.ps_cores if t["task"].startswith("ps:") else a.worker_cores
            groups.put(f"{k}-{t['task']}", t["pid"], cores)
        pids = {t["task"]: t["pid"] for t in s["tasks"]}
        time.sleep(a.warmup)
        before_gs, before_sum = window(a, run_id, a.window, set(names))
        lost = names[-1]
        t_kill = time.monotonic()
        g_kill = status(a, run_id)["chief"]["global_step"]
        os.kill(pids[lost], signal.SIGKILL)
        stepping = None
        while time.monotonic() - t_kill < 60:
            s = status(a, run_id)
            g = (s or {}).get("chief", {}).get("global_step")
            if g is not None and g > g_kill + a.batch_steps_seen:
                stepping = time.monotonic() - t_kill
                break
            time.sleep(0.2)
        time.sleep(a.settle)
        after_gs, after_sum = window(a, run_id, a.window, set(names[:-1]))
        left_out = ""
        with open(log.name) as f:
            for line in f:
                if "goes on without it" in line:
                    left_out = line.strip()
        return {"repeat": k, "run_id": run_id,
                "before_examples_per_s": round(before_gs),
                "after_examples_per_s": round(after_gs),
                "ratio": round(after_gs / before_gs, 3),
                "before_workers_sum": round(before_sum),
                "after_workers_sum": round(after_sum),
                "ratio_workers_sum": round(after_sum / before_sum, 3)
                if before_sum else None,
                "stepping_again_s": None if stepping is None
                else round(stepping, 2),
                "left_out": left_out}
    finally:
        if run_id:
            subprocess.run([a.dtf, "stop", run_id, "--grace", "3"],
                           cwd=a.job_dir, capture_output=True, timeout=60)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtf", required=True)
    ap.add_argument("--job-dir", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--mode", default="async", choices=["sync", "async"])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--worker-cores", type=float, default=0.3)
    ap.add_argument("--ps-cores", type=float, default=0.4)
    ap.add_argument("--warmup", type=float, default=4)
    ap.add_argument("--window", type=float, default=10)
    ap.add_argument("--settle", type=float, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-steps-seen", type=int, default=20)
    a = ap.parse_args()
    groups = Cgroups(str(os.getpid()))
    rows = []
    try:
        for k in range(a.repeats):
            r = one_repeat(a, k, groups)
            rows.append(r)
            print(json.dumps(r), flush=True)
    finally:
        groups.remove()
    ratios = [r["ratio"] for r in rows]
    goal = (a.workers - 1) / a.workers
    med = statistics.median(ratios)
    print("\n| repeat | before ex/s | after ex/s | after / before | "
          "workers' own, after / before | stepping again s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['repeat']} | {r['before_examples_per_s']} | "
              f"{r['after_examples_per_s']} | {r['ratio']} | "
              f"{r['ratio_workers_sum']} | {r['stepping_again_s']} |")
    print(f"\nmedian after / before {med:.3f}; the lost worker's share leaves "
          f"{goal:.3f}: {'met' if med >= goal else 'NOT met'}")
    with open(os.path.join(a.work, "results.json"), "w") as f:
        json.dump({"settings": vars(a), "repeats": rows,
                   "median_ratio": med, "goal": goal}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
