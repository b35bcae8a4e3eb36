"""Shared by the train_step peers: the job file's model, read into a plain
spec, and a TFRecord + tf.train.Example reader that needs neither TensorFlow
nor protobuf (the PyTorch peer runs under Debian's python3, which has
neither).

Only what the peers need is read from the job file: [schema] (column types,
the label column), [features] (numeric, categorical, hashed, bucketized,
crossed), [model] (hidden sizes, activation, dropout) and the learning rates
of [train.wide_optimizer] and [train.deep_optimizer].
"""

import glob
import gzip
import os
import struct
import time
import tomllib
import zlib


class Feature:
    """One [[features.KIND]] entry, with the job file's defaults applied."""

    def __init__(self, kind, table):
        self.kind = kind
        self.name = table["name"]
        self.source = table.get("source", self.name)
        self.embedding = int(table.get("embedding", 0))
        self.combiner = table.get("combiner", "mean")
        if kind == "numeric":
            self.normalize = bool(table.get("normalize", False))
            self.default = table.get("default")
            self.wide = bool(table.get("wide", False))
            self.deep = bool(table.get("deep", True))
        else:
            self.wide = bool(table.get("wide", self.embedding == 0))
            self.deep = self.embedding > 0
        self.vocabulary = [str(v) for v in table.get("vocabulary", [])]
        if table.get("num_oov_buckets", 0) or "vocabulary_file" in table:
            raise SystemExit(f"{self.name}: num_oov_buckets and "
                             "vocabulary_file are not supported by the peers")
        self.buckets = int(table.get("buckets", 0))
        self.boundaries = [float(b) for b in table.get("boundaries", [])]
        self.columns = list(table.get("columns", []))

    def num_ids(self):
        if self.kind == "categorical":
            return len(self.vocabulary)
        if self.kind == "bucketized":
            return len(self.boundaries) + 1
        return self.buckets


class Job:
    """The parts of a dtf job file that describe the model."""

    def __init__(self, path):
        with open(path, "rb") as f:
            doc = tomllib.load(f)
        self.path = os.path.abspath(path)
        schema = doc["schema"]
        self.column_types = {}
        for column in schema["columns"]:
            if isinstance(column, str):
                name, _, rest = column.partition(":")
                ctype = rest.split("=", 1)[0] or "str"
            else:
                name, ctype = column["name"], column.get("type", "str")
            self.column_types[name] = ctype
        label = schema["label"]
        self.label = label if isinstance(label, str) else label["column"]
        if not isinstance(label, str) and "map" in label:
            # The records hold the mapped value: an int when all are ints.
            mapped = list(label["map"].values())
            self.column_types[self.label] = (
                "int" if all(isinstance(v, int) for v in mapped) else "float")
        features = doc["features"]
        self.features = []
        for kind in ("numeric", "categorical", "hashed", "bucketized",
                     "crossed"):
            for table in features.get(kind, []):
                self.features.append(Feature(kind, table))
        unknown = set(features) - {"numeric", "categorical", "hashed",
                                   "bucketized", "crossed"}
        if unknown:
            raise SystemExit(f"unsupported feature kinds: {sorted(unknown)}")
        self.by_name = {f.name: f for f in self.features}
        model = doc["model"]
        if model.get("type") != "wide_deep":
            raise SystemExit("the peers implement model.type = wide_deep only")
        if model.get("batch_norm", False):
            raise SystemExit("the peers do not implement batch_norm")
        loss = model.get("loss", "binary_crossentropy")
        if loss != "binary_crossentropy":
            raise SystemExit(f"the peers implement binary_crossentropy, not {loss}")
        self.hidden = [int(h) for h in model.get("hidden", [])]
        self.activation = model.get("activation", "relu")
        self.dropout = float(model.get("dropout", 0.0))
        train = doc.get("train", {})
        self.wide_optimizer = dict(train.get("wide_optimizer", {"type": "ftrl"}))
        self.deep_optimizer = dict(train.get("deep_optimizer",
                                             {"type": "adagrad"}))
        self.shuffle_buffer = int(train.get("shuffle_buffer", 10000))
        self.seed = int(train.get("seed", 0))
        data = doc.get("data", {})
        self.records = os.path.join(os.path.dirname(self.path),
                                    data.get("records", "records"))
        self.compression = data.get("compression", "none")

    def numeric(self):
        return [f for f in self.features if f.kind == "numeric"]

    def ids_features(self):
        """The categorical kinds, in job-file order."""
        return [f for f in self.features if f.kind != "numeric"]

    def raw_source(self, name):
        """The record column behind a bucketized feature's source."""
        f = self.by_name.get(name)
        if f is not None and f.kind == "numeric":
            return f.source
        return name

    def columns_read(self):
        """The record columns the model reads, besides the label."""
        names = []
        for f in self.features:
            if f.kind == "crossed":
                for c in f.columns:
                    g = self.by_name.get(c)
                    if g is None:
                        names.append(c)
            elif f.kind == "bucketized":
                names.append(self.raw_source(f.source))
            else:
                names.append(f.source)
        return sorted(set(names))


def record_files(records_dir, split="train"):
    files = sorted(glob.glob(os.path.join(records_dir, split, "part-*")))
    files = [f for f in files if not f.endswith(".index")]
    if not files:
        raise SystemExit(f"no records under {records_dir}/{split}")
    return files


# ------------------------------------------------- TFRecord + Example reader


def _open(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rb")
    return open(path, "rb")


def read_records(path):
    """The payloads of one TFRecord file (gzip detected by its magic; zlib
    files are read whole and inflated). CRCs are not checked."""
    with _open(path) as f:
        data = f.read()
    if data[:1] == b"\x78":  # a zlib stream, not a record length
        try:
            data = zlib.decompress(data)
        except zlib.error:
            pass
    pos, end = 0, len(data)
    while pos < end:
        (length,) = struct.unpack_from("<Q", data, pos)
        pos += 12  # length, masked CRC of the length
        yield data[pos:pos + length]
        pos += length + 4  # payload, masked CRC of the payload


def _varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _fields(buf):
    """(field number, wire type, value) of one message; LEN values as bytes."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value = buf[pos:pos + 8]
            pos += 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            value = buf[pos:pos + length]
            pos += length
        elif wire == 5:
            value = buf[pos:pos + 4]
            pos += 4
        else:
            raise ValueError(f"wire type {wire} in an Example")
        yield number, wire, value


def _int64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _feature_values(buf):
    """A tf.train.Feature: list of bytes, floats or ints."""
    for number, _, inner in _fields(buf):
        values = []
        for n, wire, v in _fields(inner):
            if n != 1:
                continue
            if number == 1:  # BytesList
                values.append(bytes(v))
            elif number == 2:  # FloatList, packed or not
                if wire == 2:
                    values.extend(struct.unpack(f"<{len(v) // 4}f", v))
                else:
                    values.append(struct.unpack("<f", v)[0])
            elif number == 3:  # Int64List, packed or not
                if wire == 2:
                    pos = 0
                    while pos < len(v):
                        x, pos = _varint(v, pos)
                        values.append(_int64(x))
                else:
                    values.append(_int64(v))
        return values
    return []


def parse_example(buf, wanted=None):
    """tf.train.Example bytes -> {feature name: list of values}."""
    out = {}
    for number, _, features in _fields(buf):
        if number != 1:
            continue
        for n, _, entry in _fields(features):
            if n != 1:
                continue
            key, value = None, b""
            for m, _, v in _fields(entry):
                if m == 1:
                    key = bytes(v).decode("utf-8")
                elif m == 2:
                    value = v
            if key is not None and (wanted is None or key in wanted):
                out[key] = _feature_values(value)
    return out


def read_examples(files, wanted=None):
    for path in files:
        for record in read_records(path):
            yield parse_example(memoryview(record), wanted)


# ------------------------------------------------------------ noise meter


class CpuClock:
    """Wall time, this process's CPU time and the whole machine's busy CPU
    time at one instant; the difference of two tells how many cores other
    processes kept busy in between (noise on a shared machine)."""

    def __init__(self):
        self.wall = time.perf_counter()
        t = os.times()
        self.own = t.user + t.system
        self.busy = _machine_busy_seconds()

    def other_cores(self, start):
        wall = self.wall - start.wall
        other = (self.busy - start.busy) - (self.own - start.own)
        return max(other, 0.0) / wall if wall > 0 else 0.0


def _machine_busy_seconds():
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return 0.0
    # user nice system idle iowait irq softirq steal
    ticks = sum(int(fields[i]) for i in (1, 2, 3, 6, 7, 8))
    return ticks / os.sysconf("SC_CLK_TCK")
