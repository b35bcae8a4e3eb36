"""TensorFlow scoring the SavedModel `dtf train` exported, on TFRecord files.

tf_peer.py --saved-model DIR --batch-size N [--threads N] FILE...

Loads DIR with tf.saved_model.load and runs its `classify` (or `regress`)
signature, which takes serialized tf.Example, on every record of FILE...
(".gz" files read as GZIP), --batch-size records a call, records read by
tf.data as dtf predict reads them. Prints one JSON object: examples, the
seconds of the loading and of the scoring (reading included), and
examples_per_sec over the scoring.
"""
import argparse
import json
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--saved-model", required=True)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("files", nargs="+")
    a = p.parse_args()

    t0 = time.perf_counter()
    import tensorflow as tf  # noqa: E402  (its import is part of the load)
    if a.threads > 0:
        tf.config.threading.set_intra_op_parallelism_threads(a.threads)
        tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    model = tf.saved_model.load(a.saved_model)
    key = "classify" if "classify" in model.signatures else "regress"
    fn = model.signatures[key]
    files = sorted(set(a.files))
    gz = [f for f in files if f.endswith(".gz")]
    plain = [f for f in files if not f.endswith(".gz")]
    parts = []
    if gz:
        parts.append(tf.data.TFRecordDataset(gz, compression_type="GZIP"))
    if plain:
        parts.append(tf.data.TFRecordDataset(plain))
    data = parts[0]
    for part in parts[1:]:
        data = data.concatenate(part)
    data = data.batch(a.batch_size).prefetch(2)
    # One call outside the timing: tracing the signature's graph.
    for batch in data.take(1):
        fn(inputs=batch)
    t1 = time.perf_counter()

    examples = 0
    for batch in data:
        out = fn(inputs=batch)
        # The scores as numbers on the host, as dtf predict has them.
        next(iter(out.values())).numpy()
        examples += int(batch.shape[0])
    t2 = time.perf_counter()
    print(json.dumps({
        "examples": examples,
        "load_seconds": t1 - t0,
        "seconds": t2 - t1,
        "examples_per_sec": examples / (t2 - t1) if t2 > t1 else None,
        "signature": key,
    }))


if __name__ == "__main__":
    main()
