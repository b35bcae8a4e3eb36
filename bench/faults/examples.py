"""Examples seen twice or never: every worker of a run writes an input
trace (DTF_TEST_INPUT_TRACE in the profile's [env]: lib/runtime/train/
input_trace.h), each of its steps' lines the value of one column in every
row of its batch; the count compares what the steps of the run read with
the training file's rows, each once an epoch.

The census rows have no id: the column traced is `fnlwgt` (the census
weight, 21,648 distinct values in 32,561 rows), and the count is over
multisets, value by value: an example read twice and another of the same
weight never read would cancel out, so the figures are lower bounds of
what a per-row id would find (the traced runtime test counts by id:
`runtime_input_trace_test`).

A restart of every task (a resumed run, an allreduce run restarted from
its checkpoint) rolls the model back: a worker's trace then has a new
"start" line, at the checkpoint's global step, and the steps of the run
before it computed at that step or later are not counted (their updates
were lost with the run; the restored run reads their batches again). In
an allreduce run every start of the chief again is such a restart (its
ranks cannot go on without it), so a worker the run went on without (an
allreduce run restarted at a new size) has its steps at or past the
restart's step left out too, though it has no line after it. In the
parameter-server modes the chief can start again alone (a pod the Job
controller replaced) while the others step on: there only a worker's own
later start cuts its steps."""
import collections
import csv
import os
import tomllib

# The column of the census job the traces carry.
TRACE_COLUMN = "fnlwgt"


def trace_env(trace_dir):
    """The profile's [env] entry that asks every worker for its trace."""
    return {"DTF_TEST_INPUT_TRACE": f"{TRACE_COLUMN}@{trace_dir}"}


class Expected:
    """The training rows' values of TRACE_COLUMN, times the job's epochs."""

    def __init__(self, job_path):
        with open(job_path, "rb") as f:
            job = tomllib.load(f)
        base = os.path.dirname(job_path)
        data = job["data"]
        columns = [c.split(":")[0] if isinstance(c, str) else c["name"]
                   for c in job["schema"]["columns"]]
        at = columns.index(TRACE_COLUMN)
        self.epochs = int(job["train"]["epochs"])
        self.per_epoch = collections.Counter()
        for path in data["csv"]["train"]:
            with open(os.path.join(base, path), newline="") as f:
                rows = csv.reader(f, skipinitialspace=True)
                if data.get("header", True):
                    next(rows, None)
                for row in rows:
                    if len(row) > at:
                        self.per_epoch[int(row[at])] += 1

    def count(self, trace_dir, allreduce=False):
        """What the traces under trace_dir read against the rows: a dict
        with the examples read, expected, never read and read twice (or
        more: each read past the expected count). `allreduce`: the run's
        chief starts again only with every rank."""
        seen = collections.Counter()
        traces = sorted(n for n in os.listdir(trace_dir)
                        if n.endswith(".trace")) if os.path.isdir(
                            trace_dir) else []
        chief = os.path.join(trace_dir, "worker-0.trace")
        restarts = [start for start, _ in read_segments(chief)[1:]] if (
            allreduce and os.path.exists(chief)) else []
        for name in traces:
            for value in kept_values(os.path.join(trace_dir, name),
                                     restarts):
                seen[value] += 1
        never = twice = 0
        for value in set(seen) | set(self.per_epoch):
            want = self.per_epoch[value] * self.epochs
            never += max(0, want - seen[value])
            twice += max(0, seen[value] - want)
        return {"traces": len(traces), "read": sum(seen.values()),
                "expected": sum(self.per_epoch.values()) * self.epochs,
                "never": never, "twice": twice}


def read_segments(path):
    """One worker's trace: [start step, [(step, values)]] a process."""
    segments = []
    with open(path, errors="replace") as f:
        for line in f:
            words = line.split()
            if not words or not line.endswith("\n"):
                continue  # the last line of a killed process, cut short
            if words[0] == "start" and len(words) >= 2:
                segments.append([int(words[1]), []])
                continue
            # "step <step> <5 position fields> <values>", or "take <shard>
            # <step> ..." for a batch of a shard handed on to this worker.
            first = {"step": 1, "take": 2}.get(words[0])
            if first is None or not segments or len(words) < first + 6:
                continue
            try:
                step = int(words[first])
                values = [int(w) for w in words[first + 6:]]
            except ValueError:
                continue
            segments[-1][1].append((step, values))
    return segments


def kept_values(path, restarts):
    """The column's values of one worker's trace, without the steps a
    later restart of the run rolled back: its own next start, or for a
    process the run went on without, the first restart of every task
    (`restarts`: the chief's later starts) after it started."""
    segments = read_segments(path)
    for k, (start, steps) in enumerate(segments):
        if k + 1 < len(segments):
            cut = segments[k + 1][0]
        else:
            cut = min((r for r in restarts if r > start), default=None)
        for step, values in steps:
            if cut is not None and step >= cut:
                continue
            yield from (v for v in values if v >= 0)
