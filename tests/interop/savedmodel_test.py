#!/usr/bin/env python3
"""TensorFlow loads what `dtf export --format savedmodel` writes.

    python savedmodel_test.py --dtf PATH --shared DIR --work DIR

For each job (Adult wide & deep as examples/census/dtf.toml has it, Titanic
as examples/titanic/dtf.toml has it, Titanic as `dtf init` makes it (a text
feature, out-of-vocabulary buckets, numeric defaults for missing cells), and
two jobs written here: a multiclass wide & deep model over Adult with
out-of-vocabulary buckets, integer vocabularies and hashes, raw-column
crosses and batch normalization, a linear regression with a [schema]
vector feature, and a job of date features written in every text form
dtf reads, with times, UTC offsets and missing cells): dtf trains a few steps, `dtf predict` scores every eval
record, `dtf export` writes a SavedModel, and TensorFlow runs it

  * through tf.saved_model.load: the classify / regress signature on the
    serialized eval records, the serving_default signature on each record's
    raw features (a missing cell fed as "" or the schema's "?", or NaN), and
    a TF Serving REST-style {"instances": [...]} body;
  * through the TF1 loader (tf.compat.v1.saved_model.loader.load in a
    Session);
  * through saved_model_cli show.

Every output must match `dtf predict` within 1e-5 on every eval row.
Prints one line per check and ends with "N passed, M failed"; exits non-zero
when any check failed.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

TOLERANCE = 1e-5

ADULT_COLUMNS = """columns = [
  "age:int", "workclass:str", "fnlwgt:int", "education:str",
  "education_num:int", "marital_status:str", "occupation:str",
  "relationship:str", "race:str", "gender:str", "capital_gain:int",
  "capital_loss:int", "hours_per_week:int", "native_country:str",
  "income:str",
]"""

MULTICLASS_JOB = """
[data]
csv = {{ train = ["{shared}/data/adult/adult.data"], eval = ["{shared}/data/adult/adult.test"] }}
header = false
records = "records"
shards = 2

[schema]
missing = ["?"]
label = {{ column = "race", map = {{ "White" = 0, "Black" = 1, "Asian-Pac-Islander" = 2, "Amer-Indian-Eskimo" = 3, "Other" = 4 }} }}
{columns}

[[features.numeric]]
name = "age"
normalize = true
wide = true

[[features.numeric]]
name = "hours"
source = "hours_per_week"
default = 40

[[features.categorical]]
name = "workclass"
vocabulary = ["Private", "Self-emp-not-inc", "Local-gov"]
num_oov_buckets = 3
embedding = 4
combiner = "sum"
wide = true

[[features.categorical]]
name = "education_num"
vocabulary = [9, 10, 13]
embedding = 4

[[features.hashed]]
name = "country"
source = "native_country"
buckets = 50
embedding = 4

[[features.hashed]]
name = "age_hash"
source = "age"
buckets = 20

[[features.bucketized]]
name = "gain_buckets"
source = "capital_gain"
boundaries = [1, 1000, 5000]

[[features.crossed]]
name = "workclass_x_country"
columns = ["workclass", "native_country"]
buckets = 100

[[features.crossed]]
name = "gain_x_hours"
columns = ["gain_buckets", "hours_per_week"]
buckets = 50

[model]
type = "wide_deep"
hidden = [16, 8]
activation = "tanh"
batch_norm = true
loss = "softmax_crossentropy"
classes = 5

[train]
batch_size = 256
epochs = 1
seed = 7
output_dir = "out"
"""

REGRESSION_JOB = """
[data]
csv = {{ train = ["{shared}/data/adult/adult.data"], eval = ["{shared}/data/adult/adult.test"] }}
header = false
records = "records"
shards = 2

[schema]
missing = ["?"]
label = "hours_per_week"
{columns}

[[schema.vectors]]
name = "money"
type = "float"
columns = ["capital_gain", "capital_loss"]

[[features.numeric]]
name = "age"
normalize = true

[[features.numeric]]
name = "education_num"
normalize = true

[[features.numeric]]
name = "money"
normalize = true

[[features.categorical]]
name = "relationship"
vocabulary = ["Husband", "Not-in-family", "Wife", "Own-child", "Unmarried"]

[[features.hashed]]
name = "occupation"
buckets = 100

[[features.crossed]]
name = "gender_x_occupation"
columns = ["gender", "occupation"]
buckets = 100

[model]
type = "linear"
loss = "squared_error"

[train]
batch_size = 256
epochs = 1
seed = 7
output_dir = "out"
"""

DATES_JOB = """
[data]
csv = ["{csv}"]
split = {{ train = 0.8, eval = 0.2 }}
records = "records"
shards = 2

[schema]
label = "label"
columns = ["when:str=", "signup:str", "amount:float", "label:int"]

[[features.numeric]]
name = "amount"
normalize = true

[[features.date]]
name = "when"
default = "2020-01-01"
embedding = 4
wide = true

[[features.date]]
name = "signup"
format = "dmy"
parts = ["year", "month", "weekday", "epoch_days"]
default = "01.01.2020"
wide = true

[model]
type = "wide_deep"
hidden = [16]

[train]
batch_size = 64
epochs = 3
seed = 1
output_dir = "out"
"""


def write_dates_csv(path, rows):
    """Dates in every form `format = "auto"` reads (with times, fractions
    of a second after "." or ",", UTC offsets, empty cells) and day-first
    dates with each separator; label 1 on weekends and in summer."""
    import datetime  # noqa: PLC0415
    import random  # noqa: PLC0415
    rng = random.Random(5)
    first = datetime.date(2019, 1, 1).toordinal()
    lines = ["when,signup,amount,label"]
    for i in range(rows):
        d = datetime.date.fromordinal(first + rng.randrange(5 * 365))
        h, m, s = rng.randrange(24), rng.randrange(60), rng.randrange(60)
        forms = [
            f"{d:%Y-%m-%d}",
            f"{d:%Y-%m-%d}T{h:02}:{m:02}:{s:02}Z",
            f"{d:%Y-%m-%d} {h:02}:{m:02}:{s:02}.{rng.randrange(1000):03}+02:00",
            f"{d:%Y-%m-%d}T{h:02}:{m:02}:{s:02},5-05:30",
            f"{d:%Y-%m-%d}T{h:02}:{m:02}+0530",
            f"{d:%Y%m%d}",
            f"{d.year}/{d.month}/{d.day}",
            f"{d:%Y.%m.%d} {h:02}:{m:02}",
            f"{d.month}/{d.day}/{d.year}",
            f"{d:%d.%m.%Y}",
            "",
        ]
        when = forms[i % len(forms)]
        s2 = datetime.date.fromordinal(first + rng.randrange(5 * 365))
        signup = [f"{s2:%d/%m/%Y}", f"{s2.day}-{s2.month}-{s2.year}",
                  f"{s2:%d.%m.%Y} 10:00", ""][i % 4]
        label = int(d.weekday() >= 5 or d.month in (6, 7, 8))
        if when == "":
            label = 0
        # An empty "when" is quoted (the empty string), an empty signup is
        # not (a missing cell).
        signup = f'"{signup}"' if signup else ""
        lines.append(f'"{when}",{signup},{rng.randrange(100)},{label}')
    Path(path).write_text("\n".join(lines) + "\n")


class Checks:
    """Counts and prints checks: one line each."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"PASS {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}", flush=True)

    def section(self, title, fn, *args):
        try:
            fn(*args)
        except Exception:  # noqa: BLE001 - a crash is one failed check
            self.check(title, False, traceback.format_exc())


def run(cmd, cwd):
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed "
                           f"({out.returncode}):\n{out.stderr}")
    return out.stdout


def read_records(files):
    records = []
    for f in files:
        compression = "GZIP" if f.endswith(".gz") else ""
        for r in tf.data.TFRecordDataset(f, compression_type=compression):
            records.append(r.numpy())
    return records


def raw_features(records, sources, dims, missing_tokens, nan_for):
    """The serving_default inputs of `records`: one value per record and
    source; a missing string is fed as a missing-value token (in turn), a
    missing float as NaN, and so is a float equal to nan_for[column] (the
    schema default gen-records wrote for a missing cell). A [schema] vector
    of dims[column] > 1 values is fed as a row of them."""
    columns = {name: [] for name in sources}
    turn = 0
    for r in records:
        feats = tf.train.Example.FromString(r).features.feature
        for name, dtype in sources.items():
            f = feats.get(name)
            kind = f.WhichOneof("kind") if f is not None else None
            values = list(getattr(f, kind).value) if kind else []
            if dims[name] > 1:
                if len(values) != dims[name]:
                    raise ValueError(f"{name}: {len(values)} values")
                columns[name].append(values)
                continue
            if len(values) > 1:
                raise ValueError(f"{name}: {len(values)} values")
            if values and nan_for.get(name) == values[0]:
                columns[name].append(float("nan"))
            elif values:
                v = values[0]
                columns[name].append(v.decode() if dtype == tf.string else v)
            elif dtype == tf.string:
                columns[name].append(missing_tokens[turn % len(missing_tokens)])
                turn += 1
            elif dtype == tf.float32:
                columns[name].append(float("nan"))
            else:
                raise ValueError(f"{name}: an int64 cell is missing")
    return {name: tf.constant(v, dtype=sources[name])
            for name, v in columns.items()}


def expected(pred_lines, loss):
    """dtf predict's outputs as arrays."""
    rows = [json.loads(line) for line in pred_lines]
    if loss == "binary":
        return {"p": np.array([r["probability"] for r in rows]),
                "class": np.array([r["class"] for r in rows]),
                "name": [r.get("class_name", str(r["class"])) for r in rows]}
    if loss == "multiclass":
        return {"p": np.array([r["probabilities"] for r in rows]),
                "class": np.array([r["class"] for r in rows]),
                "name": [r.get("class_name", str(r["class"])) for r in rows]}
    return {"y": np.array([r["prediction"] for r in rows])}


def max_diff(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    return float(np.abs(a - b).max()) if a.size else 0.0


def class_agrees(want, got, p):
    """Classes agree except where the probability sits on the boundary."""
    bad = np.nonzero(want != got)[0]
    return all(abs(float(np.max(p[i])) - 0.5) < 1e-6 for i in bad) if \
        p.ndim == 1 else len(bad) == 0


class Job:
    def __init__(self, checks, name, work, dtf, toml, loss, train_args,
                 nan_for):
        self.checks = checks
        self.nan_for = nan_for
        self.name = name
        self.dir = work / name
        self.dtf = dtf
        self.loss = loss
        if isinstance(toml, list):
            # A `dtf init` command line, making the job directory.
            run([dtf, "init", name] + toml, work)
        else:
            self.dir.mkdir(parents=True, exist_ok=True)
            (self.dir / "dtf.toml").write_text(toml)
        run([dtf, "gen-records", "--job", "dtf.toml"], self.dir)
        run([dtf, "train", "--job", "dtf.toml", "--quiet"] + train_args,
            self.dir)
        self.eval_files = sorted(glob.glob(str(self.dir / "records/eval/*")))
        self.eval_files = [f for f in self.eval_files
                           if not f.endswith(".index")]
        pred = run([dtf, "predict", "--model", "out/model", "--input"] +
                   self.eval_files, self.dir)
        self.want = expected(pred.splitlines(), loss)
        self.records = read_records(self.eval_files)
        start = time.monotonic()
        run([dtf, "export", "--model", "out/model", "--format", "savedmodel",
             "--output", "savedmodel"], self.dir)
        seconds = time.monotonic() - start
        self.sm = str(self.dir / "savedmodel")
        size = sum(p.stat().st_size for p in Path(self.sm).rglob("*")
                   if p.is_file())
        print(f"{name}: dtf export took {seconds:.2f} s, SavedModel "
              f"{size} bytes, {len(self.records)} eval records", flush=True)
        checks.check(f"{name}: dtf train wrote out/model/saved_model too",
                     (self.dir / "out/model/saved_model/saved_model.pb")
                     .is_file() and
                     (self.dir / "out/model/saved_model/variables/"
                      "variables.index").is_file())
        self.model_toml = (self.dir / "out/model/model.toml").read_text()

    def n(self):
        return len(self.records)

    def compare(self, what, outputs, examples):
        """Checks one signature's outputs against dtf predict."""
        w = self.want
        if self.loss == "regression":
            y = outputs["outputs" if examples else "predictions"]
            d = max_diff(np.asarray(y)[:, 0], w["y"])
            self.checks.check(f"{self.name}: {what}: predictions",
                              d <= TOLERANCE, f"max diff {d}")
            return
        scores = np.asarray(outputs["scores" if examples else
                                    "probabilities"])
        p = w["p"]
        got_p = scores[:, 1] if self.loss == "binary" else scores
        d = max_diff(got_p, p)
        self.checks.check(f"{self.name}: {what}: probabilities", d <= TOLERANCE,
                          f"max diff {d}")
        if examples:
            names = np.asarray(outputs["classes"])
            picked = [names[i, int(np.argmax(scores[i]))].decode()
                      for i in range(len(names))]
            bad = [i for i in range(len(picked)) if picked[i] != w["name"][i]
                   and abs(float(np.max(scores[i])) - 0.5) > 1e-6]
            self.checks.check(f"{self.name}: {what}: class names",
                              not bad and len(picked) == self.n(),
                              f"{len(bad)} rows differ, first {bad[:3]}")
        else:
            classes = np.asarray(outputs["classes"])
            self.checks.check(f"{self.name}: {what}: classes",
                              classes.shape == w["class"].shape and
                              class_agrees(w["class"], classes, p),
                              f"{np.sum(classes != w['class'])} rows differ")
            logits = np.asarray(outputs["logits"])
            self.checks.check(f"{self.name}: {what}: logits shape",
                              logits.shape[0] == self.n())

    def sources(self, sig):
        return {k: v.dtype for k, v in
                sig.structured_input_signature[1].items()}

    def missing_tokens(self):
        m = re.search(r"^missing = \[(.*)\]", self.model_toml, re.M)
        tokens = [""]
        if m:
            tokens += [t for t in json.loads(f"[{m.group(1)}]") if t]
        return tokens

    def test_v2(self):
        reader = tf.train.load_checkpoint(
            os.path.join(self.sm, "variables", "variables"))
        shapes = reader.get_variable_to_shape_map()
        self.checks.check(f"{self.name}: TensorFlow reads variables/",
                          any(k.endswith("/bias") for k in shapes) and
                          all(reader.get_variable_to_dtype_map()[k] ==
                              tf.float32 for k in shapes), str(shapes))
        m = tf.saved_model.load(self.sm)
        keys = set(m.signatures.keys())
        example_key = "regress" if self.loss == "regression" else "classify"
        self.checks.check(f"{self.name}: signatures",
                          {"serving_default", example_key} <= keys, str(keys))
        out = m.signatures[example_key](inputs=tf.constant(self.records))
        self.compare(f"tf.saved_model.load {example_key} on records", out,
                     True)
        if self.name == "census":
            # A record without the numeric features (none has a default)
            # fails the batch with a message naming one.
            empty = tf.train.Example().SerializeToString()
            try:
                m.signatures[example_key](inputs=tf.constant([empty]))
                message = "no error"
            except tf.errors.InvalidArgumentError as e:
                message = e.message
            self.checks.check(f"{self.name}: a record without a required "
                              "numeric feature is refused",
                              re.search(r'numeric feature \\?"(age|education_num|'
                                        r'capital_gain|capital_loss|'
                                        r'hours_per_week)\\?".*no default',
                                        message) is not None, message)
        if self.name == "dates":
            self.check_date_errors(m.signatures[example_key])
        sig = m.signatures["serving_default"]
        sources = self.sources(sig)
        dims = {k: (v.shape[1] if v.shape.rank == 2 else 1) for k, v in
                sig.structured_input_signature[1].items()}
        raw = raw_features(self.records, sources, dims, self.missing_tokens(),
                           self.nan_for)
        self.compare("tf.saved_model.load serving_default on raw features",
                     sig(**raw), False)
        # Inputs of different lengths are refused, naming one.
        short = dict(raw)
        name = sorted(sources)[-1]
        short[name] = raw[name][:-1]
        try:
            sig(**short)
            message = "no error"
        except tf.errors.InvalidArgumentError as e:
            message = e.message
        self.checks.check(f"{self.name}: raw inputs of different lengths are "
                          "refused", "another number of rows" in message and
                          name in message, message[:500])
        # A TF Serving REST body for the first rows.
        k = min(64, self.n())
        body = json.dumps({"instances": [
            {name: (raw[name][i].numpy().decode()
                    if sources[name] == tf.string else
                    raw[name][i].numpy().tolist())
             for name in sources} for i in range(k)]})
        instances = json.loads(body)["instances"]
        feed = {name: tf.constant([inst[name] for inst in instances],
                                  dtype=sources[name]) for name in sources}
        got = {key: v.numpy() for key, v in sig(**feed).items()}
        full = {key: v.numpy() for key, v in sig(**raw).items()}
        d = max(max_diff(got[key], full[key][:k]) for key in got)
        self.checks.check(f"{self.name}: REST-style instances body", d == 0,
                          f"max diff {d}")

    def check_date_errors(self, classify):
        """Values dtf refuses are refused by the graph too, quoted."""
        def example(**values):
            e = tf.train.Example()
            for k, v in values.items():
                e.features.feature[k].bytes_list.value.extend(
                    [x.encode() for x in v])
            e.features.feature["amount"].float_list.value.append(1.0)
            return e.SerializeToString()

        cases = [
            ("a value that is not a date", {"when": ["yesterday"]},
             r'date feature \\?"when\\?".*not a date.*yesterday'),
            ("a date that does not exist", {"when": ["2023-02-29"]},
             r"not a date that exists.*2023-02-29"),
            ("hour 24", {"when": ["2023-02-28T24:00"]},
             r"not a date that exists.*2023-02-28T24:00"),
            ("month first in a day-first feature",
             {"when": ["2021-01-01"], "signup": ["12/31/2021"]},
             r'date feature \\?"signup\\?".*not a date that exists.*'
             r'12/31/2021'),
            ("a year-first date in a day-first feature",
             {"when": ["2021-01-01"], "signup": ["2021-12-31"]},
             r'date feature \\?"signup\\?".*not a date in format '
             r'\\?"dmy\\?".*2021-12-31'),
            ("two values", {"when": ["2021-01-01", "2021-01-02"]},
             r"more than one value"),
        ]
        for what, values, pattern in cases:
            try:
                classify(inputs=tf.constant([example(**values)]))
                message = "no error"
            except tf.errors.InvalidArgumentError as e:
                message = e.message
            self.checks.check(f"{self.name}: {what} is refused",
                              re.search(pattern, message) is not None,
                              message[:500])
        # Edge cases: the graph takes (with the same outputs) and refuses
        # exactly what dtf predict does.
        when_cases = [
            "2024-03-05", "2024-03-05T14:30", "2024-03-05 14:30:59",
            "2024-03-05T14:30:00.123456+02:00", "2024-03-05T14:30:00,5Z",
            "2024-03-05T00:00-0830", "2024-03-05T23:59:60.99+23:59",
            "2024-03-05T12:00-05", "20240229", "2024/3/5", "2024.03.05 01:02",
            "3/5/2024", "12/31/1999T08:00Z", "05.03.2024", "0001-01-01",
            "9999-12-31T23:59:59Z", "2000-02-29", "1900-03-01",
            "2024-3-5", "2024-03-05T", "2024-03-05T14", "2024-03-05T14:30:00.",
            "2024-03-05+02:00", "2024-03-05T14:30+24:00",
            "2024-03-05T14:30+02:60", "2024-03-05T14:30+02:",
            "2024-03-05T14:30:00.5+0", "1900-02-29", "2024-13-01",
            "2024-00-10", "0000-01-01", "2024-03-05t14:30", " 2024-03-05",
            "2024/03-05", "03-05-2024", "2024-03-05T14:30:61", "5.3.2024",
            "20240305T0830", "202403051", "2024-03-05T14:30Zx",
        ]
        signup_cases = ["5-6-2021", "05/06/2021 10:00", "5.6.2021",
                        "2021-06-05", "31.04.2021", "6/5/21"]
        cases = [{"when": [w]} for w in when_cases] + \
            [{"when": ["2021-01-01"], "signup": [s]} for s in signup_cases]
        disagree = []
        refused = 0
        for values in cases:
            record = example(**values)
            try:
                got = classify(inputs=tf.constant([record]))["scores"]
                got = float(np.asarray(got)[0, 1])
            except tf.errors.InvalidArgumentError:
                got = None
            path = self.dir / "case.tfrecord"
            with tf.io.TFRecordWriter(str(path)) as w:
                w.write(record)
            out = subprocess.run([self.dtf, "predict", "--model", "out/model",
                                  "--input", str(path)], cwd=self.dir,
                                 capture_output=True, text=True, check=False)
            want = (json.loads(out.stdout)["probability"]
                    if out.returncode == 0 else None)
            refused += want is None
            if (got is None) != (want is None) or \
                    (got is not None and abs(got - want) > TOLERANCE):
                disagree.append((values, want, got, out.stderr.strip()[-200:]))
        self.checks.check(f"{self.name}: {len(cases)} edge cases "
                          f"({refused} refused) agree with dtf predict",
                          not disagree and 0 < refused < len(cases),
                          str(disagree[:5]))

    def test_v1(self):
        """The Session loader TF Serving uses, on the export moved elsewhere
        (the vocabulary tables read their assets/ files from where the
        SavedModel is now)."""
        example_key = "regress" if self.loss == "regression" else "classify"
        moved = self.sm + "-moved"
        os.rename(self.sm, moved)
        try:
            with tf.Graph().as_default() as graph:
                with tf.compat.v1.Session(graph=graph) as sess:
                    meta = tf.compat.v1.saved_model.loader.load(
                        sess, ["serve"], moved)
                    sig = meta.signature_def[example_key]
                    feeds = {sig.inputs["inputs"].name: self.records}
                    fetches = {k: v.name for k, v in sig.outputs.items()}
                    out = sess.run(fetches, feed_dict=feeds)
        finally:
            os.rename(moved, self.sm)
        self.compare(f"TF1 loader {example_key} on records", out, True)

    def test_assets(self):
        """Each vocabulary is a file of assets/ that the graph names."""
        vocabularies = self.model_toml.count("[[features.categorical]]")
        assets = Path(self.sm) / "assets"
        files = sorted(assets.iterdir()) if assets.is_dir() else []
        from tensorflow.core.protobuf import saved_model_pb2  # noqa: PLC0415
        sm = saved_model_pb2.SavedModel.FromString(
            (Path(self.sm) / "saved_model.pb").read_bytes())
        named = sorted(a.filename for a in sm.meta_graphs[0].asset_file_def)
        self.checks.check(f"{self.name}: {vocabularies} vocabularies in "
                          "assets/", len(files) == vocabularies and
                          named == [f.name for f in files],
                          f"{[f.name for f in files]} vs {named}")

    def test_cli(self):
        cli = Path(sys.executable).parent / "saved_model_cli"
        out = run([str(cli), "show", "--dir", self.sm, "--all"], self.dir)
        self.checks.check(f"{self.name}: saved_model_cli show",
                          "serving_default" in out and
                          "tensorflow/serving/predict" in out, out[:2000])


def check_cross_hashed(checks):
    """The SparseCross the export writes (int64 internal type, hash key
    0xDECAFCAFFE) is tf.sparse.cross_hashed, also for an id column crossed
    with a raw string column."""
    from tensorflow.python.ops import gen_sparse_ops  # noqa: PLC0415
    ids = tf.SparseTensor([[0, 0], [0, 1], [2, 0]],
                          tf.constant([3, 4, 5], tf.int64), [3, 2])
    text = tf.SparseTensor([[0, 0], [1, 0], [2, 0]], ["a", "b", "c"], [3, 1])
    want = tf.sparse.cross_hashed([ids, text], num_buckets=1000)
    got = gen_sparse_ops.sparse_cross(
        indices=[ids.indices, text.indices], values=[ids.values, text.values],
        shapes=[ids.dense_shape, text.dense_shape], dense_inputs=[],
        hashed_output=True, num_buckets=1000, hash_key=0xDECAFCAFFE,
        out_type=tf.int64, internal_type=tf.int64)
    checks.check("SparseCross as exported is tf.sparse.cross_hashed",
                 np.array_equal(want.values.numpy(), got.output_values.numpy())
                 and np.array_equal(want.indices.numpy(),
                                    got.output_indices.numpy()),
                 f"{want.values.numpy()} vs {got.output_values.numpy()}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtf", required=True)
    parser.add_argument("--shared", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    work = Path(args.work).resolve()
    shared = Path(args.shared).resolve()
    examples = Path(args.source) / "examples"
    checks = Checks()
    checks.section("tf.sparse.cross_hashed", check_cross_hashed, checks)

    def example(name):
        text = (examples / name / "dtf.toml").read_text()
        return text.replace("../../../shared", str(shared))

    specs = [
        ("census", example("census"), "binary", ["--steps", "200"], {}),
        ("titanic", example("titanic"), "binary", ["--epochs", "3"],
         {"Age": -1.0, "Fare": -1.0}),
        ("titanic_init", ["--from-csv", str(shared / "data/titanic/train.csv"),
                          "--label", "Survived"], "binary",
         ["--epochs", "3"], {}),
        ("multiclass", MULTICLASS_JOB.format(shared=shared,
                                             columns=ADULT_COLUMNS),
         "multiclass", [], {}),
        ("regression", REGRESSION_JOB.format(shared=shared,
                                             columns=ADULT_COLUMNS),
         "regression", [], {}),
    ]
    work.mkdir(parents=True, exist_ok=True)
    write_dates_csv(work / "dates.csv", 3000)
    specs.append(("dates", DATES_JOB.format(csv=work / "dates.csv"), "binary",
                  [], {}))
    for name, toml, loss, train_args, nan_for in specs:
        try:
            job = Job(checks, name, work, str(Path(args.dtf).resolve()),
                      toml, loss, train_args, nan_for)
        except Exception:  # noqa: BLE001
            checks.check(f"{name}: train and export", False,
                         traceback.format_exc())
            continue
        checks.section(f"{name}: tf.saved_model.load", job.test_v2)
        checks.section(f"{name}: TF1 loader", job.test_v1)
        checks.section(f"{name}: assets", job.test_assets)
        checks.section(f"{name}: saved_model_cli", job.test_cli)
    print(f"{checks.passed} passed, {checks.failed} failed", flush=True)
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
