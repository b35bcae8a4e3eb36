#!/usr/bin/env python3
"""TensorBoard reads the event files that dtf's EventWriter writes.

    python tensorboard_events_test.py --write-events PATH --work DIR

Drives the write_events program (tests/interop/write_events.cc) and loads its
log directory with TensorBoard's EventAccumulator, the loader behind
`tensorboard --logdir`: once after a flush while the writer is still open (as
a running TensorBoard would), and again after it closed. Also reads the file
with TensorFlow's own TFRecordDataset, which checks every record's CRCs.

Prints one line per check and ends with the line "N passed, M failed";
exits non-zero when any check failed.
"""

import argparse
import os
import re
import socket
import struct
import subprocess
import sys
import time
import traceback
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from tensorboard.backend.event_processing import event_accumulator  # noqa: E402
from tensorboard.backend.event_processing import io_wrapper  # noqa: E402

# What the writer is asked to write before the flush and after it:
# (step, [(tag, value), ...]); one value is AddScalar, several AddScalars.
BEFORE_FLUSH = [
    (0, [("loss", 0.6931)]),
    (1, [("loss", 0.5)]),
    (1, [("eval/auc", 0.75), ("eval/accuracy", 0.1)]),
]
AFTER_FLUSH = [
    (2, [("loss", 0.25)]),
    (100, [("loss", -1e-3), ("learning_rate", 3e-4)]),
    (2**40, [("eval/auc", 0.875)]),
]


class Checks:
    """Counts and prints checks: one line each."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"PASS  {name}", flush=True)
        else:
            self.failed += 1
            suffix = f"\n      {detail}" if detail else ""
            print(f"FAIL  {name}{suffix}", flush=True)
        return ok

    def section(self, title, fn, *args):
        """Runs one group of checks; an exception counts as one failure."""
        print(f"\n== {title}", flush=True)
        try:
            fn(*args)
        except Exception as e:  # report and go on with the next section
            traceback.print_exc(file=sys.stdout)
            self.check(f"{title}: ran to completion", False,
                       f"{type(e).__name__}: {e}")


def as_float32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def expected_scalars(batches):
    """{tag: [(step, float32 value), ...]} in the order written."""
    want = {}
    for step, values in batches:
        for tag, value in values:
            want.setdefault(tag, []).append((step, as_float32(value)))
    return want


def commands(batches):
    return "".join(
        "scalar {} {}\n".format(
            step, " ".join(f"{tag} {value!r}" for tag, value in values))
        for step, values in batches)


def load(logdir):
    acc = event_accumulator.EventAccumulator(
        str(logdir), size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return acc


def check_scalars(checks, label, acc, want, start, end):
    tags = sorted(acc.Tags()[event_accumulator.SCALARS])
    checks.check(f"{label}: scalar tags", tags == sorted(want),
                 f"got {tags}, want {sorted(want)}")
    for tag, points in want.items():
        if tag not in tags:
            continue
        got = [(e.step, e.value) for e in acc.Scalars(tag)]
        checks.check(f"{label}: {tag} steps and values", got == points,
                     f"got {got}, want {points}")
        times = [e.wall_time for e in acc.Scalars(tag)]
        checks.check(f"{label}: {tag} wall times",
                     all(start - 1 <= t <= end + 1 for t in times)
                     and times == sorted(times),
                     f"got {times}, written between {start} and {end}")


def run_writer(checks, write_events, work):
    logdir = work / "run"
    start = time.time()
    proc = subprocess.Popen([write_events, str(logdir), ".dtf"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        path = Path(proc.stdout.readline().strip())
        checks.check("writer printed its file", path.parent == logdir,
                     f"got {path}")
        pattern = (r"events\.out\.tfevents\.(\d{10})\."
                   + re.escape(socket.gethostname()) + r"\.dtf")
        m = re.fullmatch(pattern, path.name)
        checks.check("file name is events.out.tfevents.<secs>.<host><suffix>",
                     m is not None, f"got {path.name}")
        if m:
            checks.check("file name holds the creation second",
                         int(start) <= int(m.group(1)) <= int(time.time()),
                         f"got {m.group(1)}, started at {start}")
        checks.check("TensorBoard takes it for an events file",
                     io_wrapper.IsSummaryEventsFile(str(path)))

        proc.stdin.write(commands(BEFORE_FLUSH) + "flush\n")
        proc.stdin.flush()
        ack = proc.stdout.readline().strip()
        checks.check("writer flushed", ack == "flushed", f"got {ack!r}")
        live = load(logdir)
        checks.check("open file: file_version is brain.Event:2",
                     live.file_version == 2.0, f"got {live.file_version}")
        check_scalars(checks, "open file", live,
                      expected_scalars(BEFORE_FLUSH), start, time.time())

        proc.stdin.write(commands(AFTER_FLUSH))
        proc.stdin.close()
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    end = time.time()
    checks.check("writer exited 0", rc == 0, f"exit status {rc}")
    checks.check("one file in the log directory",
                 [p.name for p in logdir.iterdir()] == [path.name],
                 f"got {sorted(p.name for p in logdir.iterdir())}")

    closed = load(logdir)
    checks.check("closed file: file_version is brain.Event:2",
                 closed.file_version == 2.0, f"got {closed.file_version}")
    check_scalars(checks, "closed file", closed,
                  expected_scalars(BEFORE_FLUSH + AFTER_FLUSH), start, end)
    return path


def read_with_tensorflow(checks, path):
    import tensorflow as tf
    from tensorflow.core.util import event_pb2

    events = [event_pb2.Event.FromString(record.numpy())
              for record in tf.data.TFRecordDataset(str(path))]
    batches = BEFORE_FLUSH + AFTER_FLUSH
    checks.check("TensorFlow reads every event",
                 len(events) == 1 + len(batches),
                 f"got {len(events)} events")
    checks.check("first event: step 0, file_version brain.Event:2",
                 events[0].step == 0
                 and events[0].file_version == "brain.Event:2",
                 f"got {events[0]}")
    for event, (step, values) in zip(events[1:], batches):
        got = [(v.tag, v.simple_value) for v in event.summary.value]
        want = [(tag, as_float32(value)) for tag, value in values]
        checks.check(f"event at step {step}: one event, values in order",
                     event.step == step and got == want,
                     f"got step {event.step} {got}, want {step} {want}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-events", required=True)
    parser.add_argument("--work", required=True, type=Path)
    args = parser.parse_args()

    checks = Checks()
    path = None

    def writer_section():
        nonlocal path
        path = run_writer(checks, args.write_events, args.work)

    checks.section("TensorBoard's EventAccumulator", writer_section)
    if path is not None:
        checks.section("TensorFlow's TFRecordDataset", read_with_tensorflow,
                       checks, path)
    print(f"\n{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed or checks.passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
