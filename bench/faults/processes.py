"""The processes of a run on this machine: found by the run in their
command line, described, and killed by pid."""
import os
import re
import signal
import subprocess


def ere(text):
    """text as a literal in a POSIX extended regular expression (pgrep)."""
    return re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", text)


def run_processes(run_id):
    """Pids of processes whose command line names the run: every task and,
    on SSH hosts, every task monitor has the run directory in its argv; a
    Slurm task has the run id."""
    pattern = f"runs/{ere(run_id)}|--run-id {ere(run_id)}( |$)"
    out = subprocess.run(["pgrep", "-f", "--", pattern],
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
    pod = re.search(r"/pods/(dtf-[a-z0-9-]+)(/| |$)", text)
    if pod:
        # A process of a pod of the Kubernetes stand-in: its wrapper, or
        # the dtf command of one of its containers.
        verb = text.split()[1] if len(text.split()) > 1 else "?"
        what = (("wrapper" if " _run-pod " in text else verb)
                + " of pod " + pod.group(1))
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
            argv = f.read()
    except OSError:
        return False
    return (f"runs/{run_id}".encode() in argv
            or f"--run-id\0{run_id}\0".encode() in argv + b"\0")


def task_pid(run_id, task):
    """The pid of the `dtf serve` of task ("worker:1") of run_id on this
    machine, found by its command line (a Slurm task's pid is not in
    `dtf status`); None when there is none."""
    role, index = task.split(":")
    pattern = (f"serve .*--role {role} --index {index} .*"
               f"(runs/{ere(run_id)}|--run-id {ere(run_id)})")
    out = subprocess.run(["pgrep", "-f", "--", pattern],
                         capture_output=True, text=True).stdout.split()
    pids = [int(p) for p in out if int(p) != os.getpid()]
    return pids[0] if len(pids) == 1 else None


def pod_processes(run_id, index=None):
    """Pids of the processes of the run's pods (of index `index` alone
    when given) under process_cluster.py, the kubectl stand-in: the pod's
    wrapper, its init container and its `dtf serve` each name the pod's
    directory, pods/dtf-<run id>-<index>-<suffix>, in their command line."""
    which = r"[0-9]+" if index is None else str(index)
    pattern = f"/pods/dtf-{ere(run_id)}-{which}-[a-z0-9]+(/| |$)"
    out = subprocess.run(["pgrep", "-f", "--", pattern],
                         capture_output=True, text=True).stdout
    me = os.getpid()
    return [int(p) for p in out.split() if int(p) != me]


def pod_task_pid(run_id, index):
    """The pid of the `dtf serve` of the run's live pod of Job index
    `index` (`dtf status` of a Kubernetes run asks kubectl: no pids), found
    by its command line as task_pid does; None when there is none."""
    pids = []
    for pid in pod_processes(run_id, index):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv[1:2] == [b"serve"] and owned(pid, run_id):
            pids.append(pid)
    return pids[0] if len(pids) == 1 else None
