"""One run of a cell: the profile written for it, `dtf launch` in the
foreground, the fault injected once the chief's global step reaches
--fault-step, the run watched until its (last) launcher exits, and the
record of what happened."""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time

from cells import Cell
from checkpoints import check_checkpoints
from examples import Expected, trace_env
from harness import Harness, error_line
from processes import describe, kill_pids, owned, run_processes, task_pid

ACCURACY_GOAL = 0.85
# A worker added with `dtf scale` steps within this many seconds.
JOIN_GOAL_S = 5
# The profile table of each backend but local ("net" is SSH over network
# namespaces).
TABLES = {"ssh": "ssh", "net": "ssh", "slurm": "slurm",
          "k8s": "kubernetes"}


class Attempt:
    """What one run has seen so far."""

    def __init__(self, cell, cdir, out_dir, t0):
        self.cell = cell
        self.cdir = cdir
        self.out_dir = out_dir
        self.t0 = t0
        self.launchers = []
        self.run_id = None
        self.series = []  # (seconds since t0, global step)
        self.fault_t = None
        self.end_t = None
        self.filler = None
        self.hang = False
        self.resumed = False
        self.drain_s = None
        self.left_at_kill = None
        # The timer that brings a cut link up again.
        self.rejoin = None
        # The timer that continues a paused task (SIGCONT).
        self.unpause = None
        # The "scale" fault: `dtf scale`, and when the worker it started
        # first finished a step (its stderr says so).
        self.scaler = None
        self.joined_t = None


class Runner:
    def __init__(self, a):
        self.a = a
        self.h = Harness(a)
        self.ssh_restarts = None  # None: unknown; False: refused
        self.ssh_restarts_error = ""
        self.expected = Expected(a.job)

    # Profiles -------------------------------------------------------------

    def profile(self, cell, restarts, trace_dir=None):
        """Writes the cell's profile, whose [env] asks for the workers'
        input traces in trace_dir (made here) when given; its name."""
        name = cell.name.replace("/", "-")
        path = os.path.join(self.h.job_dir, "profiles", f"{name}.toml")
        lines = [f"ps = {self.a.ps}", f"workers = {self.a.workers}",
                 "threads = 1"]
        if restarts:
            lines.append(f"max_restarts = {restarts}")
        lines += cell.profile_lines
        env_vars = dict(cell.env)
        if trace_dir:
            os.makedirs(trace_dir, exist_ok=True)
            env_vars.update(trace_env(trace_dir))
        env = ""
        if env_vars:
            env = "[env]\n" + "".join(f'{k} = "{v}"\n'
                                      for k, v in env_vars.items())
        if cell.backend == "local":
            text = 'backend = "local"\n' + "\n".join(lines) + "\n" + env
        else:
            # run.sh wrote the backend's base profile: its top-level keys,
            # then the backend's own table.
            with open(os.path.join(self.h.job_dir, "profiles",
                                   f"{cell.backend}-base.toml")) as f:
                base = f.read()
            table = f"[{TABLES[cell.backend]}]"
            head, rest = base.split(table, 1)
            text = head + "\n".join(lines) + "\n" + env + table + rest
        with open(path, "w") as f:
            f.write(text)
        return name

    def probe_ssh_restarts(self):
        name = self.profile(Cell("ssh/probe", "ssh", "none"), 2)
        r = self.h.dtf("launch", "--profile", name, "--dry-run")
        self.ssh_restarts = r.returncode == 0
        if not self.ssh_restarts:
            self.ssh_restarts_error = (r.stderr.strip().splitlines() or [""])[-1]

    # One run ----------------------------------------------------------------

    def run(self, cell, i):
        a = self.a
        rec = {"cell": cell.name, "backend": cell.backend,
               "fault": cell.fault, "target": cell.target, "index": i}
        restarts = cell.restarts
        if cell.backend == "ssh" and restarts and not self.ssh_restarts:
            restarts = 0
            rec["note"] = ("max_restarts refused for SSH profiles: "
                           + self.ssh_restarts_error)
        rec["max_restarts"] = restarts
        cdir, out_dir = cell_dirs(a, cell, i)
        metrics = os.path.join(cdir, "metrics.json")
        profile = self.profile(cell, restarts, os.path.join(cdir, "trace"))
        before = self.h.runs()
        at = Attempt(cell, cdir, out_dir, time.monotonic())
        p = self.h.launch(["--profile", profile, "--metrics-out", metrics,
                           "--grace", str(a.grace),
                           "--set", f"train.output_dir={out_dir}"]
                          + [x for v in cell.sets for x in ("--set", v)],
                          os.path.join(cdir, "launch"))
        at.launchers.append(p)
        at.run_id = self.h.wait_new_run(before, p)
        rec["run_id"] = at.run_id
        try:
            if at.run_id is None:
                raise RuntimeError("no run directory appeared")
            self.up_to_fault(at, rec)
            self.watch(at, rec)
        finally:
            self.end_launchers(at)
        self.record_end(at, rec, metrics)
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

    def chief_step(self, at, need_reachable=False):
        s = self.h.status(at.run_id)
        chief = (s or {}).get("chief", {})
        step = chief.get("global_step")
        if step is not None and (chief.get("reachable")
                                 or not need_reachable):
            at.series.append((time.monotonic() - at.t0, step))
            return s, step
        return s, None

    def up_to_fault(self, at, rec):
        """Polls the chief's step until --fault-step, then injects."""
        if at.cell.fault == "none":
            return
        deadline = at.t0 + self.a.cell_timeout
        p = at.launchers[0]
        while time.monotonic() < deadline and p.poll() is None:
            s, step = self.chief_step(at)
            if step is not None and step >= self.a.fault_step:
                self.scaling = None
                self.pausing = None
                at.fault_t, at.filler, at.left_at_kill = self.inject(
                    at.cell, at.run_id, s, p)
                at.scaler = self.scaling
                at.unpause = self.pausing
                if at.cell.fault == "cut":
                    at.rejoin = threading.Timer(at.cell.cut_s, self.link,
                                                ("up",))
                    at.rejoin.start()
                rec["fault_injected"] = True
                rec["fault_step"] = step
                return
            time.sleep(0.1)
        rec["fault_injected"] = False

    def watch(self, at, rec):
        """Until the last launcher exits, resuming the run once where the
        cell says so."""
        deadline = at.t0 + self.a.cell_timeout
        current = at.launchers[0]
        while True:
            if time.monotonic() > deadline:
                at.hang = True
                return
            if current.poll() is None:
                self.chief_step(at, need_reachable=True)
                self.watch_join(at)
                time.sleep(0.2)
                continue
            if at.end_t is None and at.fault_t is not None:
                at.end_t = time.monotonic()
            if not (at.cell.resume and not at.resumed
                    and at.fault_t is not None):
                return
            if at.cell.fault == "kill-launcher":
                # The tasks must go on their own.
                at.drain_s = self.drain(at.run_id, deadline)
            if at.rejoin is not None:
                # A cut link: resumed once it is up again.
                at.rejoin.join()
            state = (self.h.status(at.run_id) or {}).get("state")
            rec["state_before_resume"] = state
            if state not in ("failed", "stopped"):
                return
            at.resumed = True
            current = self.h.launch(["--resume", at.run_id, "--grace",
                                     str(self.a.grace)]
                                    + at.cell.resume_args,
                                    os.path.join(at.cdir, "resume"))
            at.launchers.append(current)

    def watch_join(self, at):
        """The "scale" fault: the moment the added worker's stderr says it
        finished its first step."""
        if at.scaler is None or at.joined_t is not None:
            return
        task = at.cell.target.replace(":", "-")
        # Its stderr here (local), or in its SSH host's work directory.
        for err in [os.path.join(self.h.runs_dir, at.run_id, task, "stderr")] \
                + glob.glob(os.path.join(self.a.work, "remote", "*", "runs",
                                         at.run_id, task, "stderr")):
            try:
                with open(err, errors="replace") as f:
                    if "first step" in f.read():
                        at.joined_t = time.monotonic()
                        return
            except OSError:
                pass

    def end_launchers(self, at):
        """A launcher still there at the end has hung: stopped. A cut link
        is up again in any case."""
        if at.rejoin is not None:
            at.rejoin.cancel()
            self.link("up")
        if at.unpause is not None:
            # The paused task continues whatever came of the run.
            at.unpause.join()
        for q in at.launchers:
            if q.poll() is None:
                at.hang = True
                q.send_signal(signal.SIGTERM)
                try:
                    q.wait(timeout=self.a.grace + 10)
                except subprocess.TimeoutExpired:
                    q.kill()
                    q.wait()
        if at.hang and at.run_id:
            self.h.dtf("stop", at.run_id, "--grace", "2", timeout=60)

    def record_end(self, at, rec, metrics):
        a = self.a
        last = at.launchers[-1]
        rec["resumed"] = at.resumed
        rec["exit_code"] = last.returncode
        rec["launcher_exit_codes"] = [q.returncode for q in at.launchers]
        rec["seconds"] = round(time.monotonic() - at.t0, 2)
        if at.run_id:
            self.record_left(at, rec)
        if at.drain_s is not None:
            rec["launcher_killed_tasks_exited_s"] = at.drain_s
        if at.left_at_kill is not None:
            rec["tasks_at_launcher_kill"] = at.left_at_kill
        m = read_json(metrics)
        rec["accuracy"] = m.get("accuracy") if m else None
        rec["steps"] = m.get("steps") if m else None
        rec["killed_after_grace"] = killed_after_grace(at.launchers)
        if at.hang:
            rec["outcome"] = "hang"
            rec["error"] = f"no end within {a.cell_timeout} s"
        elif last.returncode == 0:
            rec["outcome"] = "completed"
            rec["error"] = ""
        else:
            rec["outcome"] = "failed"
            rec["error"] = error_line(last.log_prefix + ".err")
        if at.cell.fault == "kill-launcher" and not at.resumed and at.run_id:
            self.record_unattended(at, rec)
        self.record_recovery(at, rec)
        if at.scaler is not None:
            self.record_join(at, rec)
        if at.run_id:
            s = self.h.status(at.run_id)
            if s:
                rec["state"] = s.get("state")
                rec["restarts"] = sum(t.get("restarts") or 0
                                      for t in s.get("tasks", []))
                rec["task_states"] = {t["task"]: t["state"]
                                      for t in s.get("tasks", [])}
        record_checkpoints(at, rec)

    def record_left(self, at, rec):
        """Processes (and Slurm jobs) of the run left once the last
        launcher is gone; then killed."""
        time.sleep(0.5)
        left = run_processes(at.run_id)
        rec["left_processes"] = [describe(x) for x in left]
        jobs = slurm_jobs(at.run_id) if at.cell.backend == "slurm" else []
        rec["left_slurm_jobs"] = jobs
        rec["left"] = len(left) + len(jobs)
        if left:
            # Whether they end on their own (a task without its chief exits
            # after coordinator_timeout) or would stay for good.
            rec["left_exited_on_their_own_s"] = self.drain(
                at.run_id, time.monotonic() + self.a.drain_timeout)
        kill_pids([x for x in run_processes(at.run_id)
                   if owned(x, at.run_id)])
        if jobs:
            subprocess.run(["scancel", *jobs], capture_output=True)

    def record_unattended(self, at, rec):
        """A run whose launcher was killed and not resumed: whether its
        tasks finished on their own (the tasks of an SSH or Slurm run go on
        without the launcher)."""
        s = self.h.status(at.run_id)
        rec["state_after"] = (s or {}).get("state")
        if rec["state_after"] != "succeeded":
            return
        # The chief's metrics: where --metrics-out names them on this
        # machine, else on its SSH host.
        found = [os.path.join(at.cdir, "metrics.json")]
        found += glob.glob(os.path.join(self.a.work, "remote", "*", "runs",
                                        at.run_id, "metrics.json"))
        m = next((read_json(p) for p in found if read_json(p)), None) or {}
        rec["accuracy"] = m.get("accuracy")
        rec["outcome"] = "completed"
        rec["error"] = "(the tasks finished without the launcher)"

    def record_recovery(self, at, rec):
        rec["recover_s"] = None
        if at.fault_t is None:
            return
        rec["recover_s"] = self.recovery(at.series, at.fault_t - at.t0)
        if at.end_t is not None:
            rec["launcher_exit_after_fault_s"] = round(at.end_t - at.fault_t,
                                                       2)
            if rec["outcome"] != "completed":
                rec["recover_s"] = None
                rec["to_failure_s"] = round(at.end_t - at.fault_t, 2)

    def record_join(self, at, rec):
        """The "scale" fault: `dtf scale`'s exit and output, and seconds
        from it to the added worker's first step."""
        try:
            out, err = at.scaler.communicate(timeout=70)
        except subprocess.TimeoutExpired:
            at.scaler.kill()
            out, err = at.scaler.communicate()
        rec["scale_exit"] = at.scaler.returncode
        rec["scale_output"] = (out or err).strip()
        rec["joined_s"] = (None if at.joined_t is None
                           else round(at.joined_t - at.fault_t, 2))

    def inject(self, cell, run_id, status, proc):
        """Injects the cell's fault now; (monotonic time, filler path,
        tasks running when the launcher was killed)."""
        filler = None
        left = None
        if cell.fault in ("kill", "stop", "pause"):
            tasks = {t["task"]: t for t in (status or {}).get("tasks", [])}
            pid = tasks.get(cell.target, {}).get("pid")
            if not pid:
                pid = task_pid(run_id, cell.target)
            if not pid or not owned(pid, run_id):
                raise RuntimeError(f"no live process for {cell.target}")
            os.kill(pid, signal.SIGKILL if cell.fault == "kill"
                    else signal.SIGSTOP)
            if cell.fault == "pause":
                self.pausing = threading.Timer(cell.pause_s, continue_task,
                                               (pid,))
                self.pausing.start()
        elif cell.fault == "scale":
            at_scale = time.monotonic()
            self.scaling = subprocess.Popen(
                [self.a.dtf, "scale", run_id, "--workers", cell.scale_to],
                cwd=self.h.job_dir, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True)
            return at_scale, None, None
        elif cell.fault == "kill-launcher":
            proc.kill()
            left = len(run_processes(run_id))
        elif cell.fault == "cut":
            self.link("down")
        elif cell.fault == "drop-ssh":
            self.drop_ssh(cell.target)
        elif cell.fault == "disk-full":
            filler = fill(os.path.join(self.a.tiny, "filler"))
        # "freeze": the hook froze the task at its step already.
        return time.monotonic(), filler, left

    def link(self, state):
        """The second emulated host's link to the others, down or up."""
        subprocess.run(["ip", "link", "set", self.a.net_link, state],
                       check=True)

    def drop_ssh(self, host):
        name = {"127.0.0.2": "h1", "127.0.0.3": "h2"}[host]
        with open(os.path.join(self.a.ssh_dir, name, "sshd.pid")) as f:
            listener = int(f.read())
        sessions = subprocess.run(["pgrep", "-P", str(listener)],
                                  capture_output=True, text=True).stdout
        # The per-connection server processes: the connections drop, the
        # listener stays (a reconnect can succeed).
        kill_pids(int(x) for x in sessions.split())

    def drain(self, run_id, deadline):
        """Seconds until no process of the run is left (None: some still
        are at the deadline)."""
        start = time.monotonic()
        bound = min(deadline, start + self.a.drain_timeout)
        while time.monotonic() < bound:
            if not run_processes(run_id):
                return round(time.monotonic() - start, 2)
            time.sleep(0.2)
        return None

    @staticmethod
    def recovery(series, fault_s):
        """Seconds from the fault until the global step has advanced 3
        steps past the lowest step seen since (a restored parameter server
        or a resumed run starts again from its checkpoint's step)."""
        low = None
        for t, step in series:
            if t < fault_s:
                continue
            if low is None or step < low:
                low = step
            elif step >= low + 3:
                return round(t - fault_s, 2)
        return None

    @staticmethod
    def verdict(cell, rec):
        problems = []
        if rec["outcome"] == "hang":
            problems.append("hang")
        if rec.get("left"):
            problems.append(f"{rec['left']} process(es) or job(s) left")
        ck = rec.get("checkpoints") or {}
        if ck.get("problems"):
            problems.append("unreadable checkpoint")
        if ck.get("files", 0) and not ck.get("intact"):
            problems.append("no intact checkpoint")
        if cell.fault == "scale":
            if rec.get("scale_exit") != 0:
                problems.append(f"dtf scale exited {rec.get('scale_exit')}")
            joined = rec.get("joined_s")
            if joined is None or joined > JOIN_GOAL_S:
                problems.append(f"the added worker stepped after {joined} s")
        if rec["outcome"] == "completed":
            acc = rec.get("accuracy")
            if acc is None or acc < ACCURACY_GOAL:
                problems.append(f"accuracy {acc}")
            # Every example of every epoch read (a run whose launcher was
            # killed and whose tasks went on alone: its traces are whole
            # too).
            ex = rec.get("examples") or {}
            if not ex.get("traces"):
                problems.append("no input trace")
            elif ex.get("never"):
                problems.append(f"{ex['never']} examples never read")
        elif rec["outcome"] == "failed":
            # Elastic workers (min_workers) let the run go on without the
            # lost one: a failure is not recovery either.
            restarts_allowed = (rec["max_restarts"] > 0 or cell.resume or any(
                line.startswith("min_workers") for line in cell.profile_lines))
            if cell.expect == "complete" and restarts_allowed:
                problems.append("failed although recovery was allowed")
            if not rec.get("error"):
                problems.append("failed without an error line")
        return "pass" if not problems else "FAIL: " + "; ".join(problems)


def continue_task(pid):
    """SIGCONT to a paused task (gone meanwhile: nothing to do)."""
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def cell_dirs(a, cell, i):
    """Run i of `cell`: its directory (made empty) and the run's output
    directory (on the small file system for the disk-full cells)."""
    cdir = os.path.join(a.work, "cells", cell.name.replace("/", "-"), str(i))
    shutil.rmtree(cdir, ignore_errors=True)
    os.makedirs(cdir)
    if cell.fault == "disk-full":
        return cdir, os.path.join(a.tiny, f"{cell.backend}-{i}", "out")
    return cdir, os.path.join(cdir, "out")


def record_checkpoints(at, rec):
    """The checkpoints in the run's output directory; then the disk-full
    cell's filler and output directory removed."""
    rec["checkpoints"] = (check_checkpoints(at.out_dir, at.run_id)
                          if at.run_id else None)
    if at.filler:
        try:
            os.unlink(at.filler)
        except OSError:
            pass
    if at.cell.fault == "disk-full":
        shutil.rmtree(os.path.dirname(at.out_dir), ignore_errors=True)


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError):
        return None


def killed_after_grace(launchers):
    """Tasks a launcher had to SIGKILL: they did not exit within the grace
    period after SIGTERM."""
    killed = []
    for q in launchers:
        with open(q.log_prefix + ".err", errors="replace") as f:
            for line in f:
                m = re.match(r"^dtf: ((?:ps|worker):\d+)(?: on \S+)? did "
                             r"not stop within", line)
                if m:
                    killed.append(m.group(1))
    return killed


def slurm_jobs(run_id):
    """Ids of the Slurm jobs of the run still queued or running."""
    r = subprocess.run(["squeue", "-h", "-o", "%i", "-n", f"dtf-{run_id}"],
                       capture_output=True, text=True)
    return r.stdout.split() if r.returncode == 0 else []


def fill(path):
    """Fills the file system of path; path."""
    with open(path, "wb") as f:
        block = b"\0" * (64 << 10)
        try:
            while True:
                f.write(block)
                f.flush()
        except OSError:
            pass
    return path
