#!/usr/bin/env python3
"""TensorFlow reads the sharded checkpoint of a dtf parameter-server run.

    python sharded_checkpoint_test.py --dtf PATH --values PATH \
        --shared DIR --source DIR --work DIR

The Titanic job (examples/titanic) is launched on 3 parameter servers and 2
workers with train.sharded_checkpoints. Then:

  * tf.train.latest_checkpoint names the newest generation, and
    tf.train.load_checkpoint reads it: every variable and optimizer slot
    whole (a partitioned variable's slices joined), the global step, the
    PS count;
  * each whole tensor TensorFlow reads equals, value for value, what 3 and
    what 2 parameter servers restore from the checkpoint (sharded_values,
    dtf's restore): tables partitioned by row id in TensorFlow's "mod"
    order, PS 0's rows first;
  * TensorFlow's CheckpointReader finds the data files -of-00004;
  * the export (out/model) holds no whole copy of the model: its
    SavedModel's variables/ bundle is sharded as the PS held the tables
    (one data file a PS and the chief's), and tf.saved_model.load scores
    the eval records (classify) as `dtf predict`, which reads the tables'
    rows from that bundle, does (within 1e-5).

Prints one line per check and ends with "N passed, M failed"; exits non-zero
when any check failed.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

NUM_PS = 3


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        print(f"{'ok' if ok else 'FAIL'}: {name}" +
              (f" ({detail})" if detail and not ok else ""), flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def run(cmd, cwd):
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed "
                           f"({out.returncode}):\n{out.stderr[-4000:]}")
    return out.stdout


def restored(values, job, prefix, num_ps):
    """What num_ps parameter servers restore: key -> (sparse, array)."""
    out = tempfile.mkdtemp(prefix=f"ps{num_ps}-")
    run([values, job, prefix, str(num_ps), out], cwd=out)
    whole = {}
    with open(os.path.join(out, "manifest.txt")) as f:
        for n, line in enumerate(f):
            key, sparse, *dims = line.split()
            data = np.fromfile(os.path.join(out, f"{n}.f32"), dtype="<f4")
            whole[key] = (sparse == "1", data.reshape([int(d) for d in dims]))
    return whole


def mod_order(array, num_ps):
    """The rows of a table partitioned by id % num_ps as TensorFlow
    concatenates its partitions: PS 0's (ids 0, n, 2n, ...), then PS 1's."""
    rows = array.shape[0]
    order = [i for p in range(num_ps) for i in range(p, rows, num_ps)]
    return array[order]


def check_export(checks, dtf, work, out):
    """The export of the sharded run, in TensorFlow and in dtf predict."""
    model = os.path.join(out, "model")
    sm = os.path.join(model, "saved_model")
    variables = os.path.join(sm, "variables")
    checks.check("the export has no variables.dtf: nothing was gathered",
                 not os.path.exists(os.path.join(model, "variables.dtf")))
    data = sorted(f for f in os.listdir(variables) if ".data-" in f) \
        if os.path.isdir(variables) else []
    checks.check(f"saved_model/variables: {NUM_PS + 1} data files",
                 data == [f"variables.data-0000{k}-of-0000{NUM_PS + 1}"
                          for k in range(NUM_PS + 1)], str(data))
    evals = sorted(os.path.join(work, "records/eval", f)
                   for f in os.listdir(os.path.join(work, "records/eval"))
                   if not f.endswith(".index"))
    pred = run([dtf, "predict", "--model", model, "--input"] + evals,
               cwd=work)
    want = np.array([json.loads(line)["probability"]
                     for line in pred.splitlines()])
    records = []
    for f in evals:
        compression = "GZIP" if f.endswith(".gz") else ""
        records += [r.numpy() for r in
                    tf.data.TFRecordDataset(f, compression_type=compression)]
    m = tf.saved_model.load(sm)
    got = np.asarray(m.signatures["classify"](
        inputs=tf.constant(records))["scores"])[:, 1]
    diff = float(np.max(np.abs(got - want))) \
        if got.shape == want.shape and got.size else float("inf")
    checks.check(f"tf.saved_model.load scores the {len(records)} eval "
                 "records as dtf predict does", diff <= 1e-5,
                 f"max diff {diff}, {got.shape} vs {want.shape}")


def main():
    parser = argparse.ArgumentParser()
    for flag in ("dtf", "values", "shared", "source", "work"):
        parser.add_argument(f"--{flag}", required=True)
    args = parser.parse_args()
    checks = Checks()
    work = args.work
    with open(os.path.join(args.source, "examples/titanic/dtf.toml")) as f:
        text = f.read().replace("../../../shared", args.shared)
    job = os.path.join(work, "dtf.toml")
    with open(job, "w") as f:
        f.write(text)
    run([args.dtf, "gen-records", "--job", job], cwd=work)
    run([args.dtf, "launch", "--job", job, "--ps", str(NUM_PS),
         "--workers", "2", "--set", "train.sharded_checkpoints=true",
         "--set", "train.checkpoint_every_steps=25",
         "--set", "train.epochs=3"], cwd=work)
    out = os.path.join(work, "out")

    prefix = tf.train.latest_checkpoint(out)
    checks.check("tf.train.latest_checkpoint names a generation",
                 prefix is not None and
                 os.path.basename(prefix).startswith("model.ckpt-"),
                 str(prefix))
    checks.check("no checkpoint.dtf: the chief gathered nothing",
                 not os.path.exists(os.path.join(out, "checkpoint.dtf")))
    data = sorted(f for f in os.listdir(out)
                  if prefix and f.startswith(os.path.basename(prefix) +
                                             ".data-"))
    checks.check(f"{NUM_PS + 1} data files, one a PS and the chief's",
                 data == [f"{os.path.basename(prefix)}.data-0000{k}-of-0000"
                          f"{NUM_PS + 1}" for k in range(NUM_PS + 1)],
                 str(data))
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    step = int(os.path.basename(prefix).rsplit("-", 1)[1])
    checks.check("train/global_step is the generation's step",
                 int(reader.get_tensor("train/global_step")[0]) == step)
    checks.check("meta/num_ps is 3",
                 list(reader.get_tensor("meta/num_ps")) == [NUM_PS])
    checks.check("train/ps_global_steps: one step on every PS (sync)",
                 len(set(reader.get_tensor("train/ps_global_steps"))) == 1)
    checks.check("meta/run_id is the run's",
                 len(bytes(reader.get_tensor("meta/run_id"))) > 0)

    for num_ps in (NUM_PS, 2):
        try:
            whole = restored(args.values, job, prefix, num_ps)
        except Exception:  # noqa: BLE001 - one failed check
            checks.check(f"{num_ps} PS restore the checkpoint", False,
                         traceback.format_exc())
            continue
        checks.check(f"{num_ps} PS restore every variable and slot TF lists",
                     sorted(whole) == sorted(
                         k for k in shapes
                         if k.startswith(("var/", "slot/")) and
                         not k.endswith("/step")),
                     f"dtf {sorted(whole)}, TF {sorted(shapes)}")
        tables = 0
        for key, (sparse, want) in sorted(whole.items()):
            if key not in shapes:
                continue
            got = reader.get_tensor(key)
            if sparse:
                tables += 1
                want = mod_order(want, NUM_PS)
            ok = list(shapes[key]) == list(want.shape) and \
                np.array_equal(got, want)
            checks.check(f"{key} as TF reads it = as {num_ps} PS restore it",
                         ok, f"shape {shapes[key]} vs {list(want.shape)}, "
                         f"max diff {np.max(np.abs(got - want)) if got.shape == want.shape else 'n/a'}")
        checks.check(f"tables partitioned by id among them ({num_ps} PS)",
                     tables >= 4, str(tables))
    check_export(checks, args.dtf, work, out)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
