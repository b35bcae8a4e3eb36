"""The cells of the matrix: a backend, a training mode and one fault."""

# The backends whose launcher supervises the tasks; Kubernetes (handed
# off to the cluster's Job controller) has cells of its own: k8s_cells.
BACKENDS = ("local", "ssh", "slurm")
# "net": the SSH backend over two hosts that are network namespaces, whose
# link between them can be cut (ip link set down), for the cut cells.
CUTS_S = (1.5, 8, 25, 45)
# The "pause" fault: a worker stopped (SIGSTOP) past the job's
# heartbeat_timeout (3 s: its shard is handed on) and continued (SIGCONT)
# before its stall_timeout (6 s): back, it gets its shard released to it.
PAUSE_S = 4.5


class Cell:
    def __init__(self, name, backend, fault, target="", restarts=2,
                 resume=False, env=None, expect="complete", sets=None,
                 profile=None, resume_args=None, cut_s=0, scale_to="",
                 pause_s=0):
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
        # The "pause" fault: seconds the target stays stopped.
        self.pause_s = pause_s
        # The "scale" fault: `dtf scale --workers <scale_to>`; target is
        # the worker it starts.
        self.scale_to = scale_to
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
            Cell(f"{b}/pause-worker", b, "pause", "worker:1",
                 pause_s=PAUSE_S),
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
        # A worker added mid-run: 2 of 3 slots started (max_workers), the
        # third started by `dtf scale` (under Slurm it waits in its place
        # in the job step until then).
        c += [
            Cell(f"{b}/add-worker", b, "scale", "worker:2",
                 profile=["max_workers = 3"], scale_to="3"),
            Cell(f"{b}/async-add-worker", b, "scale", "worker:2",
                 profile=["max_workers = 3"], scale_to="3",
                 sets=["train.mode=async"]),
        ]
        # Allreduce at a new size (local and SSH: Slurm starts no rank
        # again): a lost rank above min_workers restarts the others
        # without it, and `dtf scale` restarts every rank with the new one.
        if b != "slurm":
            c += [
                Cell(f"{b}/allreduce-elastic-kill-worker", b, "kill",
                     "worker:1", profile=["min_workers = 1"],
                     sets=["train.mode=allreduce"]),
                Cell(f"{b}/allreduce-add-worker", b, "scale", "worker:2",
                     profile=["max_workers = 3"], scale_to="3",
                     sets=["train.mode=allreduce"]),
            ]
        c += [
            Cell(f"{b}/elastic-kill-worker", b, "kill", "worker:1",
                 profile=["min_workers = 1"]),
            Cell(f"{b}/kill-launcher", b, "kill-launcher", resume=True),
            Cell(f"{b}/disk-full", b, "disk-full", expect="either"),
        ]
    # The network between the hosts cut for less than the heartbeat
    # timeout, more than the step watchdog's, more than the coordinator
    # timeout (15 s: the chief gives up on the unreachable PS and the run
    # fails naming it), and more than the SSH reconnect timeout (30 s: the
    # launcher gives up on the host). A run that failed so is resumed once
    # the link is up again.
    for s in CUTS_S:
        c.append(Cell(f"net/cut-{s:g}s", "net", "cut", "b", cut_s=s,
                      resume=s > 15))
    return c + k8s_cells(freeze_steps)


def k8s_cells(freeze_steps):
    """Kubernetes: `dtf launch` applies an Indexed Job and returns; the
    Job's controller replaces a failed pod max_restarts times per index
    (every pod runs `dtf serve --restore`, so a replacement goes on from
    the run's last checkpoint on the output volume), and `--resume` applies
    the recorded objects again once the Job has failed. An index out of
    restarts fails the Job (maxFailedIndexes 0), unless min_workers lets
    workers - min_workers worker indexes fail for good. Left out:
    kill-launcher (nothing to kill: the launcher has handed the run off and
    exited before the fault), drop-ssh (no SSH) and resume-3-ps (a
    Kubernetes run is resumed by applying its recorded objects again, with
    their PS count; docs/launch.md says `--resume --ps N` is refused for
    it, but cmd/launch.cc's ResumeDir looks for a plan.json such a run
    lacks, and `--ps` is dropped without a word)."""
    b = "k8s"
    return [
        Cell(f"{b}/none", b, "none"),
        Cell(f"{b}/kill-worker", b, "kill", "worker:1"),
        Cell(f"{b}/kill-ps", b, "kill", "ps:1"),
        # The chief's pod is replaced like any other (local, SSH and Slurm
        # never restart the chief); without restarts its index fails, the
        # Job fails once the other pods have given up on the chief
        # (coordinator_timeout), and `--resume` finishes the run.
        Cell(f"{b}/kill-chief", b, "kill", "worker:0", resume=True),
        Cell(f"{b}/kill-chief-resume", b, "kill", "worker:0", restarts=0,
             resume=True),
        # A stopped pod stays Running (no liveness probe); the chief leaves
        # it out, and the Job's successPolicy (the chief's index) ends the
        # Job, its controller stopping the pod.
        Cell(f"{b}/stop-worker", b, "stop", "worker:1"),
        Cell(f"{b}/freeze-worker", b, "freeze", "worker:1",
             env={"DTF_TEST_FREEZE_AT": f"worker:1@{freeze_steps}"}),
        Cell(f"{b}/async-kill-worker", b, "kill", "worker:1",
             sets=["train.mode=async"]),
        Cell(f"{b}/async-kill-ps", b, "kill", "ps:1",
             sets=["train.mode=async"]),
        # Allreduce (no PS pods, the chief index 0): the Job replaces the
        # lost rank alone, not every rank as a launcher does; where that
        # fails the Job, `--resume` restarts every rank from the
        # checkpoint.
        Cell(f"{b}/allreduce-kill-worker", b, "kill", "worker:1",
             resume=True, sets=["train.mode=allreduce"]),
        # Elastic workers: without restarts, worker:1's index fails for
        # good; with min_workers = 1 the Job goes on without it and the run
        # completes, without min_workers the Job fails naming it.
        Cell(f"{b}/elastic-kill-worker", b, "kill", "worker:1", restarts=0,
             profile=["min_workers = 1"]),
        Cell(f"{b}/kill-worker-no-restarts", b, "kill", "worker:1",
             restarts=0, expect="either"),
        # The output volume's file system full: the chief fails writing a
        # checkpoint, its replacements too, and the Job fails.
        Cell(f"{b}/disk-full", b, "disk-full", expect="either"),
    ]
