#!/usr/bin/env python3
"""TensorFlow's own synchronous allreduce training of the census wide & deep
Keras model on CPUs: the TensorFlow peer of `dtf launch --workers W` with
train.mode = "allreduce" and train.device = "cpu".

    TF_USE_LEGACY_KERAS=1 python tf_mwms_peer.py --job JOB.toml --workers W
        --batch-size N [--epoch-steps S] [--warmup-epochs K] [--epochs E]
        [--threads N] [--records DIR] [--log-dir DIR]

The model, its feature columns, its optimizers and its input pipeline are
bench/train_step/keras_peer.py's, as in tf_ps_peer.py. Here it is built
under tf.distribute.MultiWorkerMirroredStrategy (collective ring allreduce
over gRPC, CPU only) and trained by model.fit in W worker processes on
127.0.0.1, each this script run with --worker I and its TF_CONFIG: every
worker holds a replica, reads every W-th training shard (as dtf's workers
split whole files) in batches of --batch-size (the global batch is W times
that, as W dtf workers of that batch), and every step's gradients are
all-reduced between the workers. Sparse gradients are left to the
strategy (embedding and linear weights of feature columns).

model.fit runs warmup-epochs + epochs epochs of epoch-steps steps each; the
clock is read at the end of the last warm-up epoch and of the last epoch,
on worker 0. Prints worker 0's JSON object: tool, workers, batch (per
worker), steps, seconds, examples_per_sec (all workers together), loss,
versions.
"""

import argparse
import json
import os
import signal
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["TF_USE_LEGACY_KERAS"] = "1"

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "train_step"))
sys.path.insert(0, here)

from tf_ps_peer import CensusInputs, free_ports  # noqa: E402


def worker(a):
    """One worker: joins the strategy from TF_CONFIG and trains."""
    import numpy as np
    import tensorflow as tf
    import tf_keras

    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    # The strategy configures the collective ops, which TensorFlow allows
    # only before the first op runs (numeric_stats below runs some).
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=options)
    inputs = CensusInputs(a)
    model = inputs.build(tf, strategy)
    clock, fit_seconds = inputs.fit(tf, model, a)
    steps = a.epochs * a.epoch_steps
    seconds = clock.end - clock.start
    return {
        "tool": "tf-mwms", "ps": 0, "workers": a.workers,
        "batch": a.batch_size, "steps": steps,
        "warmup_steps": a.warmup_epochs * a.epoch_steps,
        "epoch_steps": a.epoch_steps, "seconds": seconds,
        "examples_per_sec": steps * a.batch_size * a.workers / seconds,
        "fit_seconds": fit_seconds, "loss": clock.loss, "threads": a.threads,
        "versions": {"tensorflow": tf.__version__,
                     "tf_keras": tf_keras.__version__,
                     "numpy": np.__version__},
    }


def launch(a):
    """Starts the W workers, returns worker 0's result."""
    ports = free_ports(a.workers)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    procs = []
    for i in range(a.workers):
        env = dict(os.environ)
        env["TF_CONFIG"] = json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": i}})
        args = [sys.executable, os.path.abspath(__file__), "--worker", str(i),
                "--job", a.job, "--workers", str(a.workers),
                "--batch-size", str(a.batch_size),
                "--epoch-steps", str(a.epoch_steps),
                "--warmup-epochs", str(a.warmup_epochs),
                "--epochs", str(a.epochs), "--threads", str(a.threads)]
        if a.records:
            args += ["--records", a.records]
        log = open(os.path.join(a.log_dir, f"worker-{i}.log"), "w") \
            if a.log_dir else subprocess.DEVNULL
        procs.append(subprocess.Popen(
            args, stdout=subprocess.PIPE if i == 0 else subprocess.DEVNULL,
            stderr=log, env=env, text=True, start_new_session=True))
    try:
        out, _ = procs[0].communicate()
        for p in procs[1:]:
            p.wait()
        bad = [i for i, p in enumerate(procs) if p.returncode != 0]
        if bad:
            raise SystemExit(f"worker(s) {bad} failed; see their logs")
        return json.loads(out.strip().splitlines()[-1])
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    p.add_argument("--job", required=True)
    p.add_argument("--records", help="records directory (default: the job's)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=256,
                   help="examples per worker and step")
    p.add_argument("--epoch-steps", type=int, default=250)
    p.add_argument("--warmup-epochs", type=int, default=1)
    p.add_argument("--epochs", type=int, default=4, help="timed epochs")
    p.add_argument("--threads", type=int, default=os.cpu_count(),
                   help="intra-op threads of every worker")
    p.add_argument("--log-dir", help="the workers' output goes to DIR/worker-<i>.log")
    a = p.parse_args()
    if a.warmup_epochs < 1:
        p.error("--warmup-epochs must be at least 1 (the first steps trace)")
    if a.worker is not None:
        print(json.dumps(worker(a)), flush=True)
        sys.stderr.flush()
        os._exit(0)
    if a.log_dir:
        os.makedirs(a.log_dir, exist_ok=True)
    print(json.dumps(launch(a)), flush=True)


if __name__ == "__main__":
    main()
