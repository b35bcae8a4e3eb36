#!/usr/bin/env python3
"""TensorFlow's own parameter-server training of the census wide & deep
Keras model: the TensorFlow peer of `dtf launch --ps P --workers W`.

    TF_USE_LEGACY_KERAS=1 python tf_ps_peer.py --job JOB.toml --ps P
        --workers W --batch-size N [--epoch-steps S] [--warmup-epochs K]
        [--epochs E] [--threads N] [--records DIR]

The model, its feature columns, its optimizers and its input pipeline are
bench/train_step/keras_peer.py's (imported, not copied): tf.feature_column +
DenseFeatures + tf.keras.experimental.WideDeepModel on tf_keras (Keras 2),
FTRL on the wide part and Adagrad on the deep part. Here it is built under
tf.distribute.experimental.ParameterServerStrategy and trained by
model.fit, which drives a tf.distribute.experimental.coordinator.
ClusterCoordinator: every step is a closure the coordinator schedules on a
free worker; the worker reads the variables from the parameter servers,
runs the step and applies its gradients there (asynchronous training: TF's
parameter-server strategy has no synchronous mode).

The cluster is real local processes: P parameter servers and W workers, each
this script run with --serve (a tf.distribute.Server on 127.0.0.1 that
joins), and this process as the coordinator (TF's "chief"; it schedules
steps and does not train). Every worker gets its own input pipeline over
every W-th training shard (keras_peer.dataset: TFRecordDataset -> repeat ->
shuffle -> batch -> parse_example -> prefetch), as dtf's workers split whole
files. Variables are placed on the parameter servers round robin, unsplit
(every variable of this model is under 64 KiB; see --partition).

model.fit runs warmup-epochs + epochs epochs of epoch-steps steps each; at
the end of every epoch Keras joins the coordinator (every scheduled step
done), and the clock is read at the end of the last warm-up epoch and of the
last epoch. Prints one JSON object: tool, ps, workers, batch, steps,
seconds, examples_per_sec (all workers together), loss, versions.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["TF_USE_LEGACY_KERAS"] = "1"

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "train_step"))


def free_ports(n):
    """N distinct free TCP ports on 127.0.0.1 (bound, then released)."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def server_config(tf, threads, workers):
    config = tf.compat.v1.ConfigProto()
    config.intra_op_parallelism_threads = threads
    # TensorFlow's parameter-server tutorial: with fewer inter-op threads
    # than workers + 1 a worker can deadlock.
    config.inter_op_parallelism_threads = max(threads, workers + 1)
    return config


def serve(a):
    """One task of the cluster: a tf.distribute.Server that never returns."""
    import tensorflow as tf
    cluster = tf.train.ClusterSpec(json.loads(a.cluster))
    server = tf.distribute.Server(
        cluster, job_name=a.task_type, task_index=a.task_index,
        protocol="grpc",
        config=server_config(tf, a.threads, len(json.loads(a.cluster)["worker"])),
        start=True)
    print(f"{a.task_type}:{a.task_index} serving {server.target}", flush=True)
    server.join()


class EpochClock:
    """Reads the clock at the end of the warm-up and of the last epoch."""

    def __init__(self, tf, warmup_epochs, total_epochs):
        clock = self

        class Callback(tf.keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                now = time.perf_counter()
                if epoch == warmup_epochs - 1:
                    clock.start = now
                if epoch == total_epochs - 1:
                    clock.end = now
                    clock.loss = float(logs["loss"])
                print(f"epoch {epoch + 1}/{total_epochs} done "
                      f"(loss {float(logs['loss']):.4f})", file=sys.stderr,
                      flush=True)

        self.callback = Callback()
        self.start = self.end = self.loss = None


class CensusInputs:
    """The census job's records, parse spec and feature columns for --job
    (and --records), the model built under a strategy, and its timed fit:
    what both TensorFlow peers (this one and tf_mwms_peer.py) share."""

    def __init__(self, a):
        import common
        import keras_peer
        self.keras_peer = keras_peer
        self.job = common.Job(a.job)
        self.files = common.record_files(a.records or self.job.records)
        if len(self.files) < a.workers:
            raise SystemExit(f"{len(self.files)} shards for {a.workers} workers")
        self.spec = keras_peer.parse_spec(self.job)
        stats = keras_peer.numeric_stats(self.job, self.files, self.spec)
        self.wide_cols, self.deep_cols = keras_peer.feature_columns(
            self.job, stats)

    def build(self, tf, strategy, **kwargs):
        tf.keras.utils.set_random_seed(self.job.seed)
        with strategy.scope():
            return self.keras_peer.build_model(
                self.job, self.wide_cols, self.deep_cols, **kwargs)

    def fit(self, tf, model, a):
        """model.fit over warmup + timed epochs, every input pipeline
        reading every n-th shard; returns the EpochClock and fit's own
        seconds."""
        job, files, spec = self.job, self.files, self.spec

        def dataset_fn(context):
            mine = files[context.input_pipeline_id::context.num_input_pipelines]
            return self.keras_peer.dataset(job, mine, spec, a.batch_size,
                                           job.shuffle_buffer, job.seed)

        total_epochs = a.warmup_epochs + a.epochs
        clock = EpochClock(tf, a.warmup_epochs, total_epochs)
        t0 = time.perf_counter()
        model.fit(tf.keras.utils.experimental.DatasetCreator(dataset_fn),
                  epochs=total_epochs, steps_per_epoch=a.epoch_steps,
                  verbose=0, callbacks=[clock.callback])
        return clock, time.perf_counter() - t0


def coordinate(a):
    ports = free_ports(a.ps + a.workers)
    cluster = {
        "ps": [f"127.0.0.1:{p}" for p in ports[:a.ps]],
        "worker": [f"127.0.0.1:{p}" for p in ports[a.ps:]],
    }
    procs = []
    env = dict(os.environ)
    for task_type, n in (("ps", a.ps), ("worker", a.workers)):
        for i in range(n):
            log = open(os.path.join(a.log_dir, f"{task_type}-{i}.log"), "w") \
                if a.log_dir else subprocess.DEVNULL
            procs.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--serve",
                 "--cluster", json.dumps(cluster), "--task-type", task_type,
                 "--task-index", str(i), "--threads", str(a.threads)],
                stdout=log, stderr=subprocess.STDOUT, env=env,
                start_new_session=True))
    try:
        return train(a, cluster)
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


def train(a, cluster):
    import numpy as np
    import tensorflow as tf
    import tf_keras

    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    # The normalizer statistics, computed here before the strategy exists
    # (dtf's workers each compute the same values before their first step).
    inputs = CensusInputs(a)

    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster), rpc_layer="grpc")
    partitioner = None
    if a.partition:
        partitioner = tf.distribute.experimental.partitioners.MinSizePartitioner(
            min_shard_bytes=a.partition, max_shards=a.ps)
    strategy = tf.distribute.experimental.ParameterServerStrategy(
        resolver, variable_partitioner=partitioner)

    model = inputs.build(tf, strategy,
                         steps_per_execution=a.steps_per_execution)
    clock, fit_seconds = inputs.fit(tf, model, a)
    steps = a.epochs * a.epoch_steps
    seconds = clock.end - clock.start
    return {
        "tool": "tf-ps", "ps": a.ps, "workers": a.workers,
        "batch": a.batch_size, "steps": steps,
        "warmup_steps": a.warmup_epochs * a.epoch_steps,
        "epoch_steps": a.epoch_steps, "seconds": seconds,
        "examples_per_sec": steps * a.batch_size / seconds,
        "fit_seconds": fit_seconds, "loss": clock.loss, "threads": a.threads,
        "steps_per_execution": a.steps_per_execution,
        "partition_min_shard_bytes": a.partition,
        "variable_devices": sorted({v.device for v in model.variables}),
        "versions": {"tensorflow": tf.__version__,
                     "tf_keras": tf_keras.__version__,
                     "numpy": np.__version__},
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--cluster", help=argparse.SUPPRESS)
    p.add_argument("--task-type", help=argparse.SUPPRESS)
    p.add_argument("--task-index", type=int, help=argparse.SUPPRESS)
    p.add_argument("--job")
    p.add_argument("--records", help="records directory (default: the job's)")
    p.add_argument("--ps", type=int, default=1)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--epoch-steps", type=int, default=250,
                   help="steps per Keras epoch (the coordinator joins after each)")
    p.add_argument("--warmup-epochs", type=int, default=1)
    p.add_argument("--epochs", type=int, default=4, help="timed epochs")
    p.add_argument("--steps-per-execution", type=int, default=1,
                   help="Keras steps per scheduled closure (default 1, as "
                        "model.fit's default)")
    p.add_argument("--partition", type=int, default=0,
                   help="MinSizePartitioner min_shard_bytes (0: no partitioner)")
    p.add_argument("--threads", type=int, default=os.cpu_count(),
                   help="intra-op threads of every task")
    p.add_argument("--log-dir", help="the tasks' output goes to DIR/<task>.log")
    a = p.parse_args()
    if a.serve:
        serve(a)
        return
    if not a.job:
        p.error("--job is required")
    if a.warmup_epochs < 1:
        p.error("--warmup-epochs must be at least 1 (the first steps trace)")
    if a.log_dir:
        os.makedirs(a.log_dir, exist_ok=True)
    print(json.dumps(coordinate(a)), flush=True)
    sys.stderr.flush()
    # The tasks are gone: skip the interpreter's teardown, in which the
    # eager context would try (and fail, loudly) to reach them again.
    os._exit(0)


if __name__ == "__main__":
    main()
