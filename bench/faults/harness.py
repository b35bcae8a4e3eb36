"""How the matrix drives dtf: its commands in the job's directory, the
launcher in a session of its own, the run it made, and the lines of its
output that say why a run failed."""
import json
import os
import re
import subprocess
import time



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


