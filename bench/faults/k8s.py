"""One run of a Kubernetes cell: a run handed to the cluster's Job
controller (docs/launch.md, "Kubernetes profiles").

`dtf launch --profile` applies the run's Indexed Job (with its Service,
ConfigMap and Secret) with kubectl and exits. kubectl here is
tests/launch/k8s/process_cluster.py (run.sh puts it first on PATH): its
pods are local processes, and it reconciles as the Job controller does (a
failed pod replaced while its index has restarts left, the Job Failed or
Complete, the pods still active then stopped) at each `kubectl get`, so
looking at the run's Job and pods every --k8s-tick seconds is the
controller's loop, and a replacement comes up to one tick late.

`dtf status` of such a run prints kubectl's table (there is no chief to
ask from here), so the chief's global step is read from its pod's log
(progress, evaluation and "resuming at global step" lines), and the fault
goes to the `dtf serve` of the live pod of the target's Job index, found by
its command line. The run ends when its Job does; a Job that failed is
continued with `dtf launch --resume` where the cell says so (the recorded
objects applied again, every pod restoring the run's last checkpoint on
the output volume). The accuracy is the chief's (its log: the exported
model's evaluation, as --metrics-out gives it elsewhere). Left: pods still
active, or processes of the run's pods, once the Job has ended, and the
objects and pod processes that `dtf stop` leaves.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import time

from harness import error_line
from processes import describe, kill_pids, pod_processes, pod_task_pid
from runner import Attempt, Runner, cell_dirs, fill, record_checkpoints

ENDED = ("Complete", "Failed", "gone")
ACTIVE = ("Pending", "Running")
# The chief's pod log: a progress line ("step N  epoch E ..."), an
# evaluation ("eval  step N ..."), a restore ("resuming at global step N").
STEP = re.compile(r"(?m)^(?:step\s+|eval\s+step\s+|.*resuming at global "
                  r"step )(\d+)")


class Cluster:
    """kubectl (the stand-in) and the stand-in's state directory."""

    def __init__(self, state_dir):
        self.dir = state_dir

    def kubectl(self, *args, timeout=60):
        return subprocess.run(["kubectl", *args], capture_output=True,
                              text=True, timeout=timeout)

    def items(self, kinds, run_id):
        try:
            r = self.kubectl("get", kinds,
                             f"--selector=dtf.dev/run-id={run_id}",
                             "--output=json")
            return json.loads(r.stdout)["items"] if r.returncode == 0 else None
        except (subprocess.TimeoutExpired, json.JSONDecodeError, KeyError):
            return None

    def look(self, run_id):
        """(the Job's condition: None while it is active, "Complete",
        "Failed", or "gone"; {pod: (Job index, phase, exit code)}); None
        when kubectl failed. Reconciles, as every `kubectl get` here."""
        items = self.items("jobs.batch,pods", run_id)
        if items is None:
            return None
        job, pods = "gone", {}
        for o in items:
            if o["kind"] == "Job":
                types = [c["type"] for c in o.get("status", {})
                         .get("conditions", []) if c.get("status") == "True"]
                job = next((t for t in ("Failed", "Complete") if t in types),
                           None)
            elif o["kind"] == "Pod":
                m = o["metadata"]
                index = int(m["annotations"]
                            ["batch.kubernetes.io/job-completion-index"])
                code = None
                for c in o["status"].get("containerStatuses", []):
                    code = c["state"].get("terminated", {}).get("exitCode")
                pods[m["name"]] = (index, o["status"]["phase"], code)
        return job, pods

    def objects(self, run_id):
        items = self.items("jobs.batch,services,configmaps,secrets,pods",
                           run_id)
        if items is None:
            return ["(kubectl get failed)"]
        return [f"{o['kind']}/{o['metadata']['name']}" for o in items]

    def pod_dir(self, pod):
        return os.path.join(self.dir, "pods", pod)


class K8sRunner(Runner):
    def __init__(self, a):
        super().__init__(a)
        self.cluster = Cluster(a.k8s_cluster)

    def run(self, cell, i):
        a = self.a
        rec = {"cell": cell.name, "backend": cell.backend,
               "fault": cell.fault, "target": cell.target, "index": i,
               "max_restarts": cell.restarts}
        cdir, out_dir = cell_dirs(a, cell, i)
        profile = self.profile(cell, cell.restarts,
                               os.path.join(cdir, "trace"))
        at = Attempt(cell, cdir, out_dir, time.monotonic())
        # An allreduce run has no PS pods: Job index i is worker:i.
        at.ps = 0 if "train.mode=allreduce" in cell.sets else a.ps
        at.pods = {}  # every pod seen: name -> [round, index, phase, code]
        at.round = 0  # 1 after a --resume
        at.job = None
        at.failure = ""
        try:
            at.run_id = self.apply(at, ["--profile", profile, "--set",
                                        f"train.output_dir={out_dir}"]
                                   + [x for v in cell.sets
                                      for x in ("--set", v)], "launch")
            rec["run_id"] = at.run_id
            if at.run_id:
                self.up_to_fault(at, rec)
                self.watch(at, rec)
        except RuntimeError as e:
            at.failure = f"bench: {e}"
        self.record_end(at, rec)
        rec["examples"] = self.expected.count(
            os.path.join(cdir, "trace"),
            allreduce="train.mode=allreduce" in cell.sets)
        rec["verdict"] = self.verdict(cell, rec)
        rec["logs"] = cdir
        rec["series"] = [[round(t, 2), step] for t, step in at.series]
        rec["fault_s"] = (None if at.fault_t is None
                          else round(at.fault_t - at.t0, 2))
        with open(os.path.join(cdir, "record.json"), "w") as f:
            json.dump(rec, f, indent=2)
        return rec

    def apply(self, at, args, name):
        """`dtf launch ARGS` (it applies the objects and exits); the run id
        it printed, None when it failed."""
        p = self.h.launch(args, os.path.join(at.cdir, name))
        at.launchers.append(p)
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            at.hang = True
            p.kill()
            p.wait()
            return None
        if p.returncode != 0:
            return None
        with open(p.log_prefix + ".out") as f:
            printed = f.read().split()
        return printed[0] if printed else None

    # The cluster ----------------------------------------------------------

    def look(self, at):
        """One round of the Job controller; at.job and at.pods updated."""
        got = self.cluster.look(at.run_id)
        if got is None:
            return
        at.job, pods = got
        for name, (index, phase, code) in pods.items():
            at.pods.setdefault(name, [at.round, index, None, None])[2:] = [
                phase, code]

    def task_index(self, at, task):
        role, n = task.split(":")
        return int(n) if role == "ps" else at.ps + int(n)

    def task_name(self, at, index):
        return (f"ps:{index}" if index < at.ps
                else f"worker:{index - at.ps}")

    def chief_pods(self, at):
        """The chief's pods of the current round, oldest first."""
        return [n for n, (r, index, _, _) in at.pods.items()
                if r == at.round and index == at.ps]

    def global_step(self, at):
        """The chief's global step by its newest pod's log (None before
        its first line); added to at.series."""
        pods = self.chief_pods(at)
        if not pods:
            return None
        path = os.path.join(self.cluster.pod_dir(pods[-1]), "dtf.log")
        try:
            with open(path, "rb") as f:
                f.seek(max(0, os.path.getsize(path) - 8192))
                text = f.read().decode(errors="replace")
        except OSError:
            return None
        steps = STEP.findall(text)
        if not steps:
            return None
        step = int(steps[-1])
        at.series.append((time.monotonic() - at.t0, step))
        return step

    def poll_steps(self, at, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.global_step(at)
            time.sleep(0.1)

    # The run ----------------------------------------------------------------

    def up_to_fault(self, at, rec):
        """Follows the chief's step until --fault-step, then injects."""
        rec["fault_injected"] = False
        if at.cell.fault == "none":
            return
        deadline = at.t0 + self.a.cell_timeout
        next_look = 0
        while time.monotonic() < deadline:
            if time.monotonic() >= next_look:
                self.look(at)
                next_look = time.monotonic() + self.a.k8s_tick
                if at.job is not None:
                    return  # the Job ended before the fault
            step = self.global_step(at)
            if step is not None and step >= self.a.fault_step:
                at.fault_t, at.filler = self.inject(at)
                rec["fault_injected"] = True
                rec["fault_step"] = step
                return
            time.sleep(0.1)

    def inject(self, at):
        """The cell's fault, now; (monotonic time, filler path)."""
        cell, filler = at.cell, None
        if cell.fault in ("kill", "stop"):
            index = self.task_index(at, cell.target)
            pid = pod_task_pid(at.run_id, index)
            if not pid:
                raise RuntimeError(f"no live dtf serve for {cell.target} "
                                   f"(Job index {index})")
            os.kill(pid, signal.SIGKILL if cell.fault == "kill"
                    else signal.SIGSTOP)
        elif cell.fault == "disk-full":
            filler = fill(os.path.join(self.a.tiny, "filler"))
        # "freeze": the hook froze the task at its step already.
        return time.monotonic(), filler

    def watch(self, at, rec):
        """Until the Job ends, resuming the run once where the cell says
        so."""
        deadline = at.t0 + self.a.cell_timeout
        while True:
            if time.monotonic() > deadline:
                at.hang = True
                return
            self.look(at)
            if at.job not in ENDED:
                self.poll_steps(at, self.a.k8s_tick)
                continue
            if at.end_t is None and at.fault_t is not None:
                at.end_t = time.monotonic()
            if at.job != "Complete":
                at.failure = self.failure_line(at)
            if not (at.cell.resume and not at.resumed and at.job != "Complete"
                    and at.fault_t is not None):
                return
            rec["state_before_resume"] = at.job
            rec["failure_before_resume"] = at.failure
            self.save_logs(at)
            at.resumed = True
            at.round += 1
            if self.apply(at, ["--resume", at.run_id], "resume") is None:
                return
            at.job, at.failure = None, ""

    def failure_line(self, at):
        """Why the Job failed: its first failed pod of the round and that
        pod's last error line."""
        if at.job == "gone":
            return "the run's Job is gone"
        failed = [(n, index, code) for n, (r, index, phase, code)
                  in at.pods.items() if r == at.round and phase == "Failed"]
        if not failed:
            return f"Job {at.job}, no failed pod"
        name, index, code = failed[0]
        line = f"Job Failed: {self.task_name(at, index)} ({name}) exit {code}"
        own = last_error(os.path.join(self.cluster.pod_dir(name), "dtf.log"))
        return line + (f": {own}" if own else "")

    # The record -------------------------------------------------------------

    def record_end(self, at, rec):
        rec["resumed"] = at.resumed
        rec["launcher_exit_codes"] = [q.returncode for q in at.launchers]
        rec["exit_code"] = rec["launcher_exit_codes"][-1]
        rec["seconds"] = round(time.monotonic() - at.t0, 2)
        rec["job"] = at.job
        last = at.launchers[-1]
        if at.hang:
            rec["outcome"] = "hang"
            rec["error"] = (f"no end within {self.a.cell_timeout} s (Job "
                            f"{at.job or 'active'})")
        elif last.returncode != 0:
            rec["outcome"] = "failed"
            rec["error"] = error_line(last.log_prefix + ".err")
        elif at.job == "Complete" and not at.failure:
            rec["outcome"] = "completed"
            rec["error"] = ""
        else:
            rec["outcome"] = "failed"
            rec["error"] = at.failure or f"Job {at.job}"
        self.record_recovery(at, rec)
        if "launcher_exit_after_fault_s" in rec:
            # Here the Job's end: the launcher exited when it applied.
            rec["job_end_after_fault_s"] = rec.pop(
                "launcher_exit_after_fault_s")
        self.record_chief(at, rec)
        restarts = {}
        for r, index, _, _ in at.pods.values():
            restarts[(r, index)] = restarts.get((r, index), -1) + 1
        rec["restarts"] = sum(restarts.values())
        rec["pods"] = {n: f"{self.task_name(at, index)} {phase} exit {code}"
                       for n, (_, index, phase, code) in at.pods.items()}
        rec["killed_after_grace"] = []
        if at.run_id:
            self.save_logs(at)
            self.record_left(at, rec)
        record_checkpoints(at, rec)

    def record_chief(self, at, rec):
        """The accuracy of the exported model (the best evaluation's, or
        the last one's) and the global step, by the last chief pod's log."""
        rec["accuracy"] = rec["steps"] = None
        pods = self.chief_pods(at)
        if not pods:
            return
        try:
            with open(os.path.join(self.cluster.pod_dir(pods[-1]),
                                   "dtf.log"), errors="replace") as f:
                text = f.read()
        except OSError:
            return
        final = re.findall(r"global step (\d+); .*?accuracy ([0-9.]+)", text)
        if not final:
            return
        rec["steps"] = int(final[-1][0])
        rec["accuracy"] = rec["last_accuracy"] = float(final[-1][1])
        best = re.findall(r"^best: eval \S+ \S+ at step (\d+)", text, re.M)
        if best:
            evals = dict(re.findall(r"^eval\s+step (\d+) .*?accuracy "
                                    r"([0-9.]+)", text, re.M))
            if best[-1] in evals:
                rec["accuracy"] = float(evals[best[-1]])

    def save_logs(self, at):
        """The pods' container logs, kept in the cell's directory (dtf stop
        and --resume remove the pods)."""
        for name in at.pods:
            for path in glob.glob(os.path.join(self.cluster.pod_dir(name),
                                               "*.log")):
                to = os.path.join(at.cdir, "pods", name)
                os.makedirs(to, exist_ok=True)
                shutil.copy(path, to)

    def record_left(self, at, rec):
        """What the Job left once it ended (pods active, processes of its
        pods), then what `dtf stop` leaves (objects, pod processes); then
        killed."""
        left_pods = set()
        if at.job in ENDED and not at.hang:
            time.sleep(0.5)
            self.look(at)
            left_pods = {n for n, (_, _, phase, _) in at.pods.items()
                         if phase in ACTIVE and os.path.exists(
                             self.cluster.pod_dir(n))}
            procs = pod_processes(at.run_id)
            rec["left_processes"] = [describe(x) for x in procs]
            left_pods |= pods_of(procs)
        rec["left_pods"] = sorted(left_pods)
        rec["objects_before_stop"] = self.cluster.objects(at.run_id)
        r = self.h.dtf("stop", at.run_id, timeout=120)
        rec["stop_exit_code"] = r.returncode
        with open(os.path.join(at.cdir, "stop.out"), "w") as f:
            f.write(r.stdout + r.stderr)
        end = time.monotonic() + 15
        while pod_processes(at.run_id) and time.monotonic() < end:
            time.sleep(0.2)
        procs = pod_processes(at.run_id)
        rec["left_after_stop"] = (self.cluster.objects(at.run_id)
                                  + [describe(x) for x in procs])
        rec["left"] = (len(left_pods) + len(rec["left_after_stop"])
                       - len(procs) + len(pods_of(procs)))
        kill_pids(procs)


def pods_of(pids):
    """The names of the pods whose processes these are."""
    names = set()
    for pid in pids:
        m = re.search(r" of pod (\S+)", describe(pid))
        if m:
            names.add(m.group(1))
    return names


def last_error(path):
    """A pod log's last error line."""
    try:
        with open(path, errors="replace") as f:
            lines = [l.strip() for l in f if "error" in l]
    except OSError:
        return ""
    return lines[-1] if lines else ""
