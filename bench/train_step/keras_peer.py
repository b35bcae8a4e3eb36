#!/usr/bin/env python3
"""The TensorFlow Keras peer of `dtf train`: the job file's wide & deep
model, built the way the original job built it.

    TF_USE_LEGACY_KERAS=1 python keras_peer.py --job JOB.toml --batch-size N
        --steps N [--warmup N] [--threads N] [--records DIR]

Keras 2 (the tf_keras package: TF 2.21 ships Keras 3, which has neither
feature columns nor the premade models) with tf.feature_column:
  numeric_column (normalizer_fn: z-score with the training split's mean and
  standard deviation), categorical_column_with_vocabulary_list (out of
  vocabulary: no id), categorical_column_with_hash_bucket,
  bucketized_column (of the raw value), crossed_column (of the raw columns'
  names and the bucketized column, as TensorFlow's census example; TF does
  not cross a hash-bucket column), embedding_column for the deep part and
  indicator_column for the wide part;
  wide: Sequential([DenseFeatures(wide indicator columns), LinearModel()]);
  deep: Sequential([DenseFeatures(numerics + embeddings),
                    Dense(h, activation), Dropout ..., Dense(1)]);
  tf.keras.experimental.WideDeepModel(wide, deep), optimizers [Ftrl, Adagrad]
  at the job's learning rates, BinaryCrossentropy(from_logits=True), no
  metrics.
Input: tf.data.TFRecordDataset over the training shards (the job's
compression) -> repeat -> shuffle(the job's shuffle_buffer) -> batch ->
map(tf.io.parse_example) -> prefetch, read, decompressed and parsed inside
the timed loop as dtf does. model.fit runs warmup + steps steps; a callback
reads the clock after the last warm-up step and after the last step.

Prints one JSON object: tool, batch, steps, warmup, seconds (of the timed
steps only), examples_per_sec, loss (Keras' running mean over the fit),
threads, other_cores_timed (cores other processes kept busy during the timed
steps).
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["TF_USE_LEGACY_KERAS"] = "1"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

fc = tf.feature_column
DTYPES = {"int": tf.int64, "float": tf.float32, "str": tf.string}


def parse_spec(job):
    numeric_sources = {f.source for f in job.numeric()}
    spec = {job.label: tf.io.FixedLenFeature([1], DTYPES[job.column_types[job.label]])}
    for column in job.columns_read():
        dtype = DTYPES[job.column_types[column]]
        if column in numeric_sources or dtype != tf.string and any(
                f.kind == "bucketized" and job.raw_source(f.source) == column
                for f in job.features):
            spec[column] = tf.io.FixedLenFeature([1], dtype)
        else:
            spec[column] = tf.io.VarLenFeature(dtype)
    return spec


def dataset(job, files, spec, batch_size, shuffle, seed):
    compression = {"none": "", "gzip": "GZIP", "zlib": "ZLIB"}[job.compression]
    ds = tf.data.TFRecordDataset(files, compression_type=compression)
    ds = ds.repeat()
    if shuffle > 0:
        ds = ds.shuffle(shuffle, seed=seed)
    ds = ds.batch(batch_size, drop_remainder=True)

    def parse(serialized):
        features = tf.io.parse_example(serialized, spec)
        label = tf.cast(features.pop(job.label), tf.float32)
        return features, label

    return ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
        tf.data.AUTOTUNE)


def numeric_stats(job, files, spec):
    """Mean and (population) standard deviation of each numeric source."""
    sources = sorted({f.source for f in job.numeric()})
    compression = {"none": "", "gzip": "GZIP", "zlib": "ZLIB"}[job.compression]
    ds = tf.data.TFRecordDataset(files, compression_type=compression)
    ds = ds.batch(1 << 20).map(
        lambda s: tf.io.parse_example(s, {c: spec[c] for c in sources}))
    parts = {c: [] for c in sources}
    for batch in ds:
        for c in sources:
            parts[c].append(batch[c].numpy().astype(np.float64).ravel())
    stats = {}
    for c in sources:
        values = np.concatenate(parts[c])
        std = values.std()
        stats[c] = (float(values.mean()), float(std) if std > 0 else 1.0)
    return stats


def feature_columns(job, stats):
    numeric, categorical = {}, {}
    for f in job.numeric():
        normalizer = None
        if f.normalize:
            mean, std = stats[f.source]
            normalizer = (lambda m, s: lambda x: (tf.cast(x, tf.float32) - m) / s)(
                mean, std)
        numeric[f.name] = fc.numeric_column(f.source,
                                            normalizer_fn=normalizer,
                                            default_value=f.default)
    for f in job.ids_features():
        if f.kind == "categorical":
            col = fc.categorical_column_with_vocabulary_list(
                f.source, f.vocabulary,
                dtype=DTYPES[job.column_types[f.source]] if
                job.column_types[f.source] != "float" else tf.int64)
        elif f.kind == "hashed":
            col = fc.categorical_column_with_hash_bucket(
                f.source, f.buckets, dtype=DTYPES[job.column_types[f.source]])
        elif f.kind == "bucketized":
            # Bucketizes the raw value (dtf bucketizes before normalize).
            raw = fc.numeric_column(job.raw_source(f.source))
            col = fc.bucketized_column(raw, f.boundaries)
        else:
            keys = []
            for c in f.columns:
                g = job.by_name.get(c)
                if g is not None and g.kind == "bucketized":
                    keys.append(categorical[c])
                elif g is not None:
                    keys.append(g.source)  # the raw column, as TF crosses it
                else:
                    keys.append(c)
            col = fc.crossed_column(keys, f.buckets)
        categorical[f.name] = col
    wide, deep = [], []
    for f in job.numeric():
        if f.deep:
            deep.append(numeric[f.name])
        if f.wide:
            wide.append(numeric[f.name])
    for f in job.ids_features():
        col = categorical[f.name]
        if f.wide:
            wide.append(fc.indicator_column(col))
        if f.deep:
            deep.append(fc.embedding_column(col, f.embedding,
                                            combiner=f.combiner))
    return wide, deep


def optimizer(options, default_type):
    kind = options.get("type", default_type)
    lr = float(options.get("learning_rate", 0.01 if kind == "sgd" else 0.001))
    if kind == "ftrl":
        return tf.keras.optimizers.Ftrl(
            lr, learning_rate_power=options.get("learning_rate_power", -0.5),
            initial_accumulator_value=options.get("initial_accumulator_value",
                                                  0.1),
            l1_regularization_strength=options.get("l1", 0.0),
            l2_regularization_strength=options.get("l2", 0.0),
            l2_shrinkage_regularization_strength=options.get("l2_shrinkage",
                                                             0.0))
    if kind == "adagrad":
        return tf.keras.optimizers.Adagrad(
            lr, initial_accumulator_value=options.get(
                "initial_accumulator_value", 0.1),
            epsilon=options.get("epsilon", 1e-7))
    if kind == "adam":
        return tf.keras.optimizers.Adam(
            lr, beta_1=options.get("beta1", 0.9),
            beta_2=options.get("beta2", 0.999),
            epsilon=options.get("epsilon", 1e-7))
    return tf.keras.optimizers.SGD(lr, momentum=options.get("momentum", 0.0),
                                   nesterov=options.get("nesterov", False))


def build_model(job, wide_cols, deep_cols, **compile_args):
    """The compiled WideDeepModel of the job (also used by
    bench/cluster_train/tf_ps_peer.py, under ParameterServerStrategy)."""
    linear = tf.keras.Sequential([
        tf.keras.layers.DenseFeatures(wide_cols),
        tf.keras.experimental.LinearModel(units=1),
    ])
    layers = [tf.keras.layers.DenseFeatures(deep_cols)]
    for h in job.hidden:
        layers.append(tf.keras.layers.Dense(h, activation=job.activation))
        if job.dropout > 0:
            layers.append(tf.keras.layers.Dropout(job.dropout))
    layers.append(tf.keras.layers.Dense(1))
    dnn = tf.keras.Sequential(layers)
    model = tf.keras.experimental.WideDeepModel(linear, dnn)
    model.compile(
        optimizer=[optimizer(job.wide_optimizer, "ftrl"),
                   optimizer(job.deep_optimizer, "adagrad")],
        loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),
        **compile_args)
    return model


class Clock(tf.keras.callbacks.Callback):
    def __init__(self, warmup, total):
        super().__init__()
        self.warmup, self.total = warmup, total
        self.start = self.end = self.loss = self.other_cores = None

    def on_train_batch_end(self, batch, logs=None):
        if batch == self.warmup - 1:
            self.start, self.clock = time.perf_counter(), common.CpuClock()
        if batch == self.total - 1:
            self.end = time.perf_counter()
            self.other_cores = common.CpuClock().other_cores(self.clock)
            self.loss = float(logs["loss"])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--job", required=True)
    p.add_argument("--records", help="records directory (default: the job's)")
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    a = p.parse_args()
    if a.warmup < 1:
        raise SystemExit("--warmup must be at least 1 (the first step traces)")

    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    job = common.Job(a.job)
    files = common.record_files(a.records or job.records)
    spec = parse_spec(job)
    stats = numeric_stats(job, files, spec)
    wide_cols, deep_cols = feature_columns(job, stats)

    tf.keras.utils.set_random_seed(job.seed)
    model = build_model(job, wide_cols, deep_cols)

    ds = dataset(job, files, spec, a.batch_size, job.shuffle_buffer, job.seed)
    total = a.warmup + a.steps
    clock = Clock(a.warmup, total)
    model.fit(ds, epochs=1, steps_per_epoch=total, verbose=0,
              callbacks=[clock])
    seconds = clock.end - clock.start
    import tf_keras
    print(json.dumps({
        "tool": "keras", "batch": a.batch_size, "steps": a.steps,
        "warmup": a.warmup, "seconds": seconds,
        "examples_per_sec": a.steps * a.batch_size / seconds,
        "loss": clock.loss, "threads": a.threads,
        "other_cores_timed": clock.other_cores,
        "versions": {"tensorflow": tf.__version__,
                     "tf_keras": tf_keras.__version__,
                     "numpy": np.__version__},
    }))


if __name__ == "__main__":
    main()
