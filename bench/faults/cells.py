"""The cells of the matrix: a backend, a training mode and one fault."""

BACKENDS = ("local", "ssh", "slurm")
# "net": the SSH backend over two hosts that are network namespaces, whose
# link between them can be cut (ip link set down), for the cut cells.
CUTS_S = (1.5, 8, 25, 45)


class Cell:
    def __init__(self, name, backend, fault, target="", restarts=2,
                 resume=False, env=None, expect="complete", sets=None,
                 profile=None, resume_args=None, cut_s=0):
        self.name = name
        self.backend = backend
        self.fault = fault
        self.target = target
        # max_restarts of the profile (the SSH backend may refuse it).
        self.restarts = restarts
        # Whether a failed run is continued with `dtf launch --resume`.
        self.resume = resume
        # More arguments of that `--resume` (another PS count).
        self.resume_args = resume_args or []
        # The "cut" fault: seconds the second host's link stays down.
        self.cut_s = cut_s
        # The profile's [env] (the freeze hook).
        self.env = env or {}
        # "complete", or "either" where failing with an error is right.
        self.expect = expect
        # --set values of the launch (the training mode) and more profile
        # lines (min_workers).
        self.sets = sets or []
        self.profile_lines = profile or []


def cells(freeze_steps):
    """Every cell, backend by backend."""
    c = []
    for b in BACKENDS:
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
        else:
            # The chief lost, the run resumed with 3 parameter servers
            # instead of 2: each restores its part of the new partition.
            # (An SSH run keeps its tasks on their hosts.)
            c.append(Cell(f"{b}/resume-3-ps", b, "kill", "worker:0",
                          resume=True, resume_args=["--ps", "3"]))
        # Asynchronous PS training: each push applied alone, a lost task
        # restarted as in sync mode.
        c += [
            Cell(f"{b}/async-kill-worker", b, "kill", "worker:1",
                 sets=["train.mode=async"]),
            Cell(f"{b}/async-kill-ps", b, "kill", "ps:1",
                 sets=["train.mode=async"]),
        ]
        # Allreduce: a lost rank restarts every rank from the last
        # checkpoint; under Slurm (no restarts for allreduce) the run
        # fails naming the rank and `--resume` finishes it.
        if b == "slurm":
            c.append(Cell(f"{b}/allreduce-kill-worker", b, "kill", "worker:1",
                          restarts=0, resume=True,
                          sets=["train.mode=allreduce"]))
        else:
            c.append(Cell(f"{b}/allreduce-kill-worker", b, "kill", "worker:1",
                          sets=["train.mode=allreduce"]))
        # Elastic workers: a lost worker is left out above min_workers,
        # restarts or not.
        c += [
            Cell(f"{b}/elastic-kill-worker", b, "kill", "worker:1",
                 profile=["min_workers = 1"]),
            Cell(f"{b}/kill-launcher", b, "kill-launcher", resume=True),
            Cell(f"{b}/disk-full", b, "disk-full", expect="either"),
        ]
    # The network between the hosts cut for less than the heartbeat
    # timeout, more than the step watchdog's, more than the coordinator
    # timeout, and more than the SSH reconnect timeout (30 s): the last may
    # end the run with an error naming the host.
    for s in CUTS_S:
        c.append(Cell(f"net/cut-{s:g}s", "net", "cut", "b", cut_s=s,
                      expect="either" if s > 30 else "complete"))
    return c
