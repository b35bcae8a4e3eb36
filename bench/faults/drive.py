"""The fault matrix: runs of a real job under one fault each, on the local
and the SSH backend (bench/faults/run.sh sets up the job, the hosts and the
small file system; see bench/README.md).

Each run: `dtf launch` in the foreground with a profile written for the
cell, the fault injected once the chief's global step (`dtf status --json`)
reaches --fault-step, then the run watched until its launcher exits, and
for the cells that call for it continued with `dtf launch --resume`.
Recorded per run: the outcome (completed, or failed and the launcher's last
line), the final accuracy (--metrics-out), the time to recover (from the
fault to the global step advancing again, or to the launcher's exit when
the run fails), the processes left once the launcher is gone, and the
checkpoint generations in the output directory that still read back whole
(magic, CRC-32C, the run's own id).
"""
import argparse
import glob
import json
import os
import platform
import re
import shutil
import signal
import struct
import subprocess
import sys
import time

ACCURACY_GOAL = 0.85


# --- checkpoints -------------------------------------------------------------

def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    t = CRC_TABLE
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_checkpoint(path):
    """(global_step, run_id) of a bundle that reads back whole, or raises
    ValueError saying what is wrong (docs/formats/checkpoint.md)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 20 or data[:8] != b"DTFBNDL\x01":
        raise ValueError(f"{path}: not a bundle ({len(data)} bytes)")
    (stored,) = struct.unpack_from("<I", data, len(data) - 4)
    if masked(crc32c(data[:-4])) != stored:
        raise ValueError(f"{path}: checksum mismatch ({len(data)} bytes)")
    version, count = struct.unpack_from("<II", data, 8)
    if version != 1:
        raise ValueError(f"{path}: version {version}")
    pos = 16
    step = None
    run_id = None
    for _ in range(count):
        (n,) = struct.unpack_from("<H", data, pos)
        name = data[pos + 2:pos + 2 + n].decode()
        pos += 2 + n
        _type, rank = data[pos], data[pos + 1]
        pos += 2 + 8 * rank
        (length,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        value = data[pos:pos + length]
        pos += length
        if name == "train/global_step":
            (step,) = struct.unpack_from("<q", value)
        elif name == "meta/run_id":
            run_id = value.decode()
    if pos != len(data) - 4:
        raise ValueError(f"{path}: {len(data) - 4 - pos} stray bytes")
    return step, run_id


def check_checkpoints(out_dir, run_id):
    """Generations (checkpoint-<step>.dtf and checkpoint.dtf) in out_dir:
    how many, how many read back whole and are this run's, the newest step,
    and the problems."""
    files = sorted(glob.glob(os.path.join(out_dir, "checkpoint-[0-9]*.dtf")))
    latest = os.path.join(out_dir, "checkpoint.dtf")
    if os.path.exists(latest):
        files.append(latest)
    good = 0
    newest = None
    problems = []
    for path in files:
        try:
            step, owner = read_checkpoint(path)
        except (OSError, ValueError, struct.error, UnicodeDecodeError) as e:
            problems.append(str(e))
            continue
        if owner != run_id:
            problems.append(f"{path}: run {owner!r}, not {run_id}")
            continue
        good += 1
        if step is not None and (newest is None or step > newest):
            newest = step
    known = re.compile(r"^(checkpoint(-[0-9]+|-best)?\.dtf|model|"
                       r"events\.out\.tfevents\..*)$")
    try:
        others = sorted(n for n in os.listdir(out_dir) if not known.match(n))
    except OSError:
        others = []
    return {"files": len(files), "intact": good, "newest_step": newest,
            "problems": problems, "other_files": others}


# --- processes ---------------------------------------------------------------

def run_processes(run_id):
    """Pids of processes whose command line names the run (every task and,
    on SSH hosts, every task monitor has the run directory in its argv)."""
    out = subprocess.run(["pgrep", "-f", "--", f"runs/{run_id}"],
                         capture_output=True, text=True).stdout
    me = os.getpid()
    return [int(p) for p in out.split() if int(p) != me]


def describe(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return f"{pid} (gone)"
    text = " ".join(a.decode(errors="replace") for a in argv if a)
    m = re.search(r"--role (\w+) --index (\d+)", text)
    what = f"{m.group(1)}:{m.group(2)}" if m else text[:80]
    if " task exec " in text:
        what = "monitor " + (re.search(r"--task (\S+)", text) or [None, "?"])[1]
    return f"{pid} {what} (state {state})"


def kill_pids(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def owned(pid, run_id):
    """Whether pid is a process of run_id (checked before any signal)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f"runs/{run_id}".encode() in f.read()
    except OSError:
        return False


# --- the harness -------------------------------------------------------------

class Harness:
    def __init__(self, a):
        self.a = a
        self.job_dir = os.path.dirname(a.job)
        self.runs_dir = os.path.join(self.job_dir, ".dtf", "runs")

    def dtf(self, *args, timeout=30):
        return subprocess.run([self.a.dtf, *args], cwd=self.job_dir,
                              capture_output=True, text=True, timeout=timeout)

    def status(self, run_id):
        try:
            r = self.dtf("status", run_id, "--json", timeout=15)
        except subprocess.TimeoutExpired:
            return None
        if r.returncode != 0:
            return None
        try:
            return json.loads(r.stdout)
        except json.JSONDecodeError:
            return None

    def launch(self, args, log_prefix):
        out = open(log_prefix + ".out", "w")
        err = open(log_prefix + ".err", "w")
        # Its own session: a signal meant for it reaches it alone.
        p = subprocess.Popen([self.a.dtf, "launch", *args], cwd=self.job_dir,
                             stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        p.log_prefix = log_prefix
        return p

    def runs(self):
        try:
            return set(os.listdir(self.runs_dir))
        except FileNotFoundError:
            return set()

    def wait_new_run(self, before, proc, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            new = sorted(self.runs() - before)
            if new and os.path.exists(
                    os.path.join(self.runs_dir, new[-1], "plan.json")):
                return new[-1]
            if proc.poll() is not None:
                new = sorted(self.runs() - before)
                return new[-1] if new else None
            time.sleep(0.05)
        return None


def last_line(path, pattern=r"^dtf: "):
    try:
        with open(path, errors="replace") as f:
            lines = [l.rstrip("\n") for l in f if re.search(pattern, l)]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def error_line(path):
    """The launcher's line saying why the run failed: its last 'dtf:' line
    that is not a task's routine note."""
    try:
        with open(path, errors="replace") as f:
            lines = [l.rstrip("\n") for l in f if l.startswith("dtf: ")]
    except OSError:
        return ""
    routine = re.compile(r"exited with status 0$|started on|ready at|"
                         r"shipped|already there|restarting|restarted")
    chosen = ""
    for line in reversed(lines):
        if not routine.search(line):
            chosen = line
            break
    chosen = chosen or (lines[-1] if lines else "")
    chosen = chosen.split("; the last lines of")[0]
    m = re.search(r"\b((?:ps|worker):\d+)\b", chosen)
    if m and "error" in chosen:
        # The task's own error line says why: quoted by the local
        # launcher, streamed with the task's prefix by both.
        own = re.compile(r"^(?:  |\[(?:\S+ )?" + re.escape(m.group(1)) +
                         r"\] )dtf: error: (.*)")
        with open(path, errors="replace") as f:
            found = [own.match(l.rstrip("\n")) for l in f]
        found = [x.group(1) for x in found if x]
        if found:
            chosen += ": " + found[-1]
    return chosen


# --- cells -------------------------------------------------------------------

class Cell:
    def __init__(self, name, backend, fault, target="", restarts=2,
                 resume=False, env=None, expect="complete", note="",
                 sets=None, profile=None):
        self.name = name
        # --set values of the launch (e.g. the training mode) and more
        # profile lines (e.g. min_workers).
        self.sets = sets or []
        self.profile_lines = profile or []
        self.backend = backend
        self.fault = fault
        self.target = target
        self.restarts = restarts
        self.resume = resume
        self.env = env or {}
        self.expect = expect
        self.note = note


def cells(freeze_steps):
    c = []
    for b in ("local", "ssh"):
        c += [
            Cell(f"{b}/none", b, "none"),
            Cell(f"{b}/kill-worker", b, "kill", "worker:1"),
            Cell(f"{b}/kill-ps", b, "kill", "ps:1"),
            Cell(f"{b}/kill-chief", b, "kill", "worker:0", resume=True),
            Cell(f"{b}/stop-worker", b, "stop", "worker:1"),
            Cell(f"{b}/freeze-worker", b, "freeze", "worker:1",
                 env={"DTF_TEST_FREEZE_AT": f"worker:1@{freeze_steps}"}),
        ]
        if b == "ssh":
            c.append(Cell(f"{b}/drop-ssh", b, "drop-ssh", "127.0.0.3"))
        # Allreduce: a lost rank restarts every rank from the last
        # checkpoint. Elastic workers: a lost worker is left out above
        # min_workers, restarts or not.
        c += [
            Cell(f"{b}/allreduce-kill-worker", b, "kill", "worker:1",
                 sets=["train.mode=allreduce"]),
            Cell(f"{b}/elastic-kill-worker", b, "kill", "worker:1",
                 profile=["min_workers = 1"]),
        ]
        c += [
            Cell(f"{b}/kill-launcher", b, "kill-launcher", resume=True),
            Cell(f"{b}/disk-full", b, "disk-full", expect="either"),
        ]
    return c


class Runner:
    def __init__(self, a):
        self.a = a
        self.h = Harness(a)
        self.ssh_restarts = None  # None: unknown; False: refused
        self.ssh_restarts_error = ""

    # Profiles -------------------------------------------------------------

    def profile(self, cell, restarts):
        name = cell.name.replace("/", "-")
        path = os.path.join(self.h.job_dir, "profiles", f"{name}.toml")
        lines = [f"ps = {self.a.ps}", f"workers = {self.a.workers}",
                 "threads = 1"]
        if restarts:
            lines.append(f"max_restarts = {restarts}")
        lines += cell.profile_lines
        if cell.backend == "ssh":
            with open(os.path.join(self.h.job_dir, "profiles",
                                   "ssh-base.toml")) as f:
                base = f.read()
            text = base.replace("ps = 2\nworkers = 2\n", "")
            head, ssh = text.split("[ssh]", 1)
            text = head + "\n".join(lines) + "\n"
            if cell.env:
                text += "[env]\n" + "".join(
                    f'{k} = "{v}"\n' for k, v in cell.env.items())
            text += "[ssh]" + ssh
        else:
            text = 'backend = "local"\n' + "\n".join(lines) + "\n"
            if cell.env:
                text += "[env]\n" + "".join(
                    f'{k} = "{v}"\n' for k, v in cell.env.items())
        with open(path, "w") as f:
            f.write(text)
        return name

    def probe_ssh_restarts(self):
        cell = Cell("ssh/probe", "ssh", "none")
        name = self.profile(cell, 2)
        r = self.h.dtf("launch", "--profile", name, "--dry-run")
        self.ssh_restarts = r.returncode == 0
        if not self.ssh_restarts:
            self.ssh_restarts_error = (r.stderr.strip().splitlines() or [""])[-1]

    # One run ----------------------------------------------------------------

    def run(self, cell, i):
        a = self.a
        h = self.h
        rec = {"cell": cell.name, "backend": cell.backend,
               "fault": cell.fault, "target": cell.target, "index": i}
        restarts = cell.restarts
        if cell.backend == "ssh" and restarts and not self.ssh_restarts:
            restarts = 0
            rec["note"] = ("max_restarts refused for SSH profiles: "
                           + self.ssh_restarts_error)
        rec["max_restarts"] = restarts
        cdir = os.path.join(a.work, "cells", cell.name.replace("/", "-"),
                            str(i))
        shutil.rmtree(cdir, ignore_errors=True)
        os.makedirs(cdir)
        if cell.fault == "disk-full":
            out_dir = os.path.join(a.tiny, f"{cell.backend}-{i}", "out")
        else:
            out_dir = os.path.join(cdir, "out")
        metrics = os.path.join(cdir, "metrics.json")
        profile = self.profile(cell, restarts)
        before = h.runs()
        t0 = time.monotonic()
        p = h.launch(["--profile", profile, "--metrics-out", metrics,
                      "--grace", str(a.grace),
                      "--set", f"train.output_dir={out_dir}"]
                     + [x for v in cell.sets for x in ("--set", v)],
                     os.path.join(cdir, "launch"))
        launchers = [p]
        run_id = h.wait_new_run(before, p)
        rec["run_id"] = run_id
        series = []  # (seconds since t0, global step)
        fault_t = None
        g0 = None
        filler = None
        end_t = None
        outcome_reason = ""
        hang = False
        deadline = t0 + a.cell_timeout
        resumed = False
        drain_s = None
        left_at_kill = None
        try:
            if run_id is None:
                raise RuntimeError("no run directory appeared")
            # Up to the fault.
            if cell.fault == "none":
                fault_t = None
            else:
                while time.monotonic() < deadline and p.poll() is None:
                    s = h.status(run_id)
                    step = (s or {}).get("chief", {}).get("global_step")
                    if step is not None:
                        series.append((time.monotonic() - t0, step))
                        if step >= a.fault_step:
                            g0 = step
                            break
                    time.sleep(0.1)
                if g0 is None:
                    rec["fault_injected"] = False
                else:
                    fault_t, filler, left_at_kill = self.inject(
                        cell, run_id, s, p, out_dir)
                    rec["fault_injected"] = True
                    rec["fault_step"] = g0
            # Then until the last launcher exits.
            current = p
            while True:
                if time.monotonic() > deadline:
                    hang = True
                    break
                rc = current.poll()
                if rc is None:
                    s = h.status(run_id)
                    step = (s or {}).get("chief", {}).get("global_step")
                    if step is not None and (s or {}).get("chief", {}).get(
                            "reachable"):
                        series.append((time.monotonic() - t0, step))
                    time.sleep(0.2)
                    continue
                if end_t is None and fault_t is not None:
                    end_t = time.monotonic()
                if (cell.resume and not resumed and fault_t is not None):
                    if cell.fault == "kill-launcher":
                        # The tasks must go on their own.
                        drain_s = self.drain(run_id, deadline)
                    s = h.status(run_id)
                    state = (s or {}).get("state")
                    rec["state_before_resume"] = state
                    if state in ("failed", "stopped"):
                        resumed = True
                        current = h.launch(["--resume", run_id, "--grace",
                                            str(a.grace)],
                                           os.path.join(cdir, "resume"))
                        launchers.append(current)
                        continue
                break
        finally:
            for q in launchers:
                if q.poll() is None:
                    hang = True
                    q.send_signal(signal.SIGTERM)
                    try:
                        q.wait(timeout=a.grace + 10)
                    except subprocess.TimeoutExpired:
                        q.kill()
                        q.wait()
            if hang and run_id:
                h.dtf("stop", run_id, "--grace", "2", timeout=60)
        total = time.monotonic() - t0
        last = launchers[-1]
        rec["resumed"] = resumed
        rec["exit_code"] = last.returncode
        rec["launcher_exit_codes"] = [q.returncode for q in launchers]
        rec["seconds"] = round(total, 2)
        # Processes left once the (last) launcher is gone.
        left = []
        if run_id:
            time.sleep(0.5)
            left = run_processes(run_id)
            rec["left"] = len(left)
            rec["left_processes"] = [describe(x) for x in left]
            if left:
                # Whether they end on their own (a task without its chief
                # exits after coordinator_timeout) or would stay for good.
                rec["left_exited_on_their_own_s"] = self.drain(
                    run_id, time.monotonic() + a.drain_timeout)
            kill_pids([x for x in run_processes(run_id) if owned(x, run_id)])
        if drain_s is not None:
            rec["launcher_killed_tasks_exited_s"] = drain_s
        if left_at_kill is not None:
            rec["tasks_at_launcher_kill"] = left_at_kill
        # Outcome.
        m = None
        if os.path.exists(metrics):
            try:
                with open(metrics) as f:
                    m = json.load(f)
            except (OSError, json.JSONDecodeError):
                m = None
        rec["accuracy"] = m.get("accuracy") if m else None
        rec["steps"] = m.get("steps") if m else None
        errfile = last.log_prefix + ".err"
        # Tasks the launcher had to SIGKILL: they did not exit within the
        # grace period after SIGTERM.
        killed = []
        for q in launchers:
            with open(q.log_prefix + ".err", errors="replace") as f:
                for line in f:
                    m = re.match(r"^dtf: ((?:ps|worker):\d+)(?: on \S+)? did "
                                 r"not stop within", line)
                    if m:
                        killed.append(m.group(1))
        rec["killed_after_grace"] = killed
        if hang:
            rec["outcome"] = "hang"
            rec["error"] = f"no end within {a.cell_timeout} s"
        elif last.returncode == 0:
            rec["outcome"] = "completed"
            rec["error"] = ""
        else:
            rec["outcome"] = "failed"
            rec["error"] = error_line(errfile)
        if cell.fault == "kill-launcher" and not resumed and run_id:
            s = h.status(run_id)
            rec["state_after"] = (s or {}).get("state")
            # The tasks of an SSH run go on without the launcher: their
            # chief's metrics are on its host.
            remote = glob.glob(os.path.join(a.work, "remote", "*", "runs",
                                            run_id, "metrics.json"))
            if remote and rec["state_after"] == "succeeded":
                with open(remote[0]) as f:
                    m = json.load(f)
                rec["accuracy"] = m.get("accuracy")
                rec["outcome"] = "completed"
                rec["error"] = "(the tasks finished without the launcher)"
        # Time to recover.
        rec["recover_s"] = None
        if fault_t is not None:
            rec["recover_s"] = self.recovery(series, fault_t - t0)
            if end_t is not None:
                rec["launcher_exit_after_fault_s"] = round(end_t - fault_t, 2)
            if rec["outcome"] != "completed" and end_t is not None:
                rec["recover_s"] = None
                rec["to_failure_s"] = round(end_t - fault_t, 2)
        # Status afterwards: restarts and the run's state.
        if run_id:
            s = h.status(run_id)
            if s:
                rec["state"] = s.get("state")
                rec["restarts"] = sum(t.get("restarts") or 0
                                      for t in s.get("tasks", []))
                rec["task_states"] = {t["task"]: t["state"]
                                      for t in s.get("tasks", [])}
        rec["checkpoints"] = check_checkpoints(out_dir, run_id) if run_id \
            else None
        if filler:
            try:
                os.unlink(filler)
            except OSError:
                pass
        if cell.fault == "disk-full":
            shutil.rmtree(os.path.dirname(out_dir), ignore_errors=True)
        rec["verdict"] = self.verdict(cell, rec)
        rec["logs"] = cdir
        rec["series"] = [[round(t, 2), step] for t, step in series]
        rec["fault_s"] = None if fault_t is None else round(fault_t - t0, 2)
        with open(os.path.join(cdir, "record.json"), "w") as f:
            json.dump(rec, f, indent=2)
        return rec

    def inject(self, cell, run_id, status, proc, out_dir):
        """Injects the cell's fault now; (monotonic time, filler path,
        tasks running when the launcher was killed)."""
        tasks = {t["task"]: t for t in (status or {}).get("tasks", [])}
        filler = None
        left = None
        if cell.fault in ("kill", "stop"):
            pid = tasks.get(cell.target, {}).get("pid")
            if not pid or not owned(pid, run_id):
                raise RuntimeError(f"no live process for {cell.target}")
            os.kill(pid, signal.SIGKILL if cell.fault == "kill"
                    else signal.SIGSTOP)
        elif cell.fault == "freeze":
            pass  # the hook froze it at its step already
        elif cell.fault == "kill-launcher":
            proc.kill()
            left = len(run_processes(run_id))
        elif cell.fault == "drop-ssh":
            name = {"127.0.0.2": "h1", "127.0.0.3": "h2"}[cell.target]
            with open(os.path.join(self.a.ssh_dir, name, "sshd.pid")) as f:
                listener = int(f.read())
            sessions = subprocess.run(["pgrep", "-P", str(listener)],
                                      capture_output=True,
                                      text=True).stdout.split()
            # The per-connection server processes: the connections drop,
            # the listener stays (a reconnect can succeed).
            kill_pids(int(x) for x in sessions)
        elif cell.fault == "disk-full":
            filler = os.path.join(self.a.tiny, "filler")
            with open(filler, "wb") as f:
                block = b"\0" * (64 << 10)
                try:
                    while True:
                        f.write(block)
                        f.flush()
                except OSError:
                    pass
        return time.monotonic(), filler, left

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

    def verdict(self, cell, rec):
        problems = []
        if rec["outcome"] == "hang":
            problems.append("hang")
        if rec.get("left"):
            problems.append(f"{rec['left']} process(es) left")
        ck = rec.get("checkpoints") or {}
        if ck.get("problems"):
            problems.append("unreadable checkpoint")
        if ck.get("files", 0) and not ck.get("intact"):
            problems.append("no intact checkpoint")
        if rec["outcome"] == "completed":
            acc = rec.get("accuracy")
            if acc is None or acc < ACCURACY_GOAL:
                problems.append(f"accuracy {acc}")
        elif rec["outcome"] == "failed":
            restarts_allowed = rec["max_restarts"] > 0 or cell.resume
            if cell.expect == "complete" and restarts_allowed:
                problems.append("failed although recovery was allowed")
            if not rec.get("error"):
                problems.append("failed without an error line")
        return "pass" if not problems else "FAIL: " + "; ".join(problems)


def summarize(records):
    by = {}
    for r in records:
        by.setdefault(r["cell"], []).append(r)
    rows = []
    for cell, rs in by.items():
        outcomes = {}
        for r in rs:
            outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
        accs = [r["accuracy"] for r in rs if r.get("accuracy") is not None
                and r["outcome"] == "completed"]
        rec = [r["recover_s"] for r in rs if r.get("recover_s") is not None]
        fail = [r["to_failure_s"] for r in rs if r.get("to_failure_s")
                is not None]
        errors = sorted({r["error"] for r in rs if r.get("error")})
        ck = [r.get("checkpoints") or {} for r in rs]
        rows.append({
            "cell": cell,
            "runs": len(rs),
            "max_restarts": rs[0]["max_restarts"],
            "outcomes": outcomes,
            "accuracy_min": min(accs) if accs else None,
            "accuracy_max": max(accs) if accs else None,
            "recover_s_median": sorted(rec)[len(rec) // 2] if rec else None,
            "recover_s_max": max(rec) if rec else None,
            "to_failure_s_max": max(fail) if fail else None,
            "left_max": max(r.get("left", 0) for r in rs),
            "checkpoints_intact": f"{sum(c.get('intact', 0) for c in ck)}/"
                                  f"{sum(c.get('files', 0) for c in ck)}",
            "restarts": sum(r.get("restarts") or 0 for r in rs),
            "killed_after_grace": sum(len(r.get("killed_after_grace") or [])
                                      for r in rs),
            "errors": errors,
            "verdicts": {v: sum(1 for r in rs if r["verdict"] == v)
                         for v in sorted({r["verdict"] for r in rs})},
        })
    return rows


def fmt(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def table(rows):
    out = ["| cell | runs | max_restarts | outcome | accuracy | "
           "recover s (median / max) | to failure s (max) | restarts | "
           "SIGKILLed after grace | left | checkpoints intact | verdict |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | "
           "--- | --- |"]
    for r in rows:
        outcome = ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"]
                                                          .items()))
        acc = "-" if r["accuracy_min"] is None else (
            f"{r['accuracy_min']:.4f}" if r["accuracy_min"] ==
            r["accuracy_max"] else
            f"{r['accuracy_min']:.4f}–{r['accuracy_max']:.4f}")
        rec = "-" if r["recover_s_median"] is None else \
            f"{fmt(r['recover_s_median'])} / {fmt(r['recover_s_max'])}"
        verdicts = r["verdicts"]
        verdict = "pass" if list(verdicts) == ["pass"] else ", ".join(
            f"{v} ({n} of {r['runs']})" for v, n in verdicts.items())
        out.append(f"| {r['cell']} | {r['runs']} | {r['max_restarts']} | "
                   f"{outcome} | {acc} | {rec} | {fmt(r['to_failure_s_max'])}"
                   f" | {r['restarts']} | {r['killed_after_grace']}"
                   f" | {r['left_max']} | {r['checkpoints_intact']} | "
                   f"{verdict} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtf", required=True)
    ap.add_argument("--job", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--ssh-dir", required=True)
    ap.add_argument("--tiny", required=True)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--ssh-runs", type=int, default=1)
    ap.add_argument("--cells", default="")
    ap.add_argument("--ps", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--grace", type=int, default=5)
    ap.add_argument("--fault-step", type=int, default=1200)
    ap.add_argument("--freeze-steps", type=int, default=1200)
    ap.add_argument("--cell-timeout", type=int, default=180)
    ap.add_argument("--drain-timeout", type=int, default=60)
    ap.add_argument("--no-ssh", action="store_true")
    a = ap.parse_args()
    runner = Runner(a)
    chosen = [c for c in cells(a.freeze_steps)
              if (not a.cells or any(re.search(p, c.name)
                                     for p in a.cells.split(",")))
              and not (a.no_ssh and c.backend == "ssh")]
    if any(c.backend == "ssh" for c in chosen):
        runner.probe_ssh_restarts()
    records = []
    for cell in chosen:
        n = a.ssh_runs if cell.backend == "ssh" else a.runs
        for i in range(n):
            r = runner.run(cell, i)
            records.append(r)
            acc = "-" if r.get("accuracy") is None else \
                f"{r['accuracy']:.4f}"
            rec = r.get("recover_s")
            print(f"{cell.name} #{i}: {r['outcome']} acc {acc} recover "
                  f"{rec if rec is not None else r.get('to_failure_s', '-')}"
                  f" s, left {r.get('left')}, checkpoints "
                  f"{(r.get('checkpoints') or {}).get('intact')}/"
                  f"{(r.get('checkpoints') or {}).get('files')}, "
                  f"{r['verdict']}"
                  + (f" [{r['error']}]" if r.get("error") else ""),
                  flush=True)
    rows = summarize(records)
    text = table(rows)
    print()
    print(text)
    results = {
        "machine": {"host": platform.node(), "cpus": os.cpu_count(),
                    "kernel": platform.release()},
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "settings": {k: v for k, v in vars(a).items()},
        "ssh_restarts_supported": runner.ssh_restarts,
        "ssh_restarts_error": runner.ssh_restarts_error,
        "summary": rows,
        "runs": records,
        "table": text,
    }
    with open(os.path.join(a.work, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    bad = [r for r in records if r["verdict"] != "pass"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
