#!/usr/bin/env python3
"""TensorFlow scores the eval records with the SavedModel of a sharded run,
as `dtf predict` does.

    python tf_score.py WORK

WORK is bench/sharded's work directory: WORK/out/model (the export) and
WORK/records/eval. Runs `dtf predict` (WORK/predict.jsonl must have been
written by it), loads WORK/out/model/saved_model with tf.saved_model.load,
scores the records through its classify signature, and prints the largest
difference of the probabilities, the time and TensorFlow's peak RSS.
Exits non-zero when they differ by more than 1e-5.
"""

import glob
import json
import os
import resource
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def main():
    work = sys.argv[1]
    want = np.array([json.loads(line)["probability"]
                     for line in open(os.path.join(work, "predict.jsonl"))])
    files = sorted(f for f in glob.glob(os.path.join(work, "records/eval/*"))
                   if not f.endswith(".index"))
    records = []
    for f in files:
        compression = "GZIP" if f.endswith(".gz") else ""
        records += [r.numpy() for r in
                    tf.data.TFRecordDataset(f, compression_type=compression)]
    start = time.monotonic()
    m = tf.saved_model.load(os.path.join(work, "out/model/saved_model"))
    loaded = time.monotonic() - start
    got = []
    for i in range(0, len(records), 4096):
        out = m.signatures["classify"](inputs=tf.constant(records[i:i + 4096]))
        got.append(np.asarray(out["scores"])[:, 1])
    got = np.concatenate(got)
    diff = float(np.max(np.abs(got - want))) if got.shape == want.shape \
        else float("inf")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"tensorflow: loaded in {loaded:.1f} s, scored {len(got)} records "
          f"(dtf predict: {len(want)}), max |difference| {diff:.2e}, "
          f"peak RSS {rss:.0f} MB")
    return 0 if diff <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
