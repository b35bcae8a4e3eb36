#!/usr/bin/env python3
"""The PyTorch (CPU) peer of `dtf train`: the job file's wide & deep model.

    python3 torch_peer.py --job JOB.toml --batch-size N --steps N
                          [--warmup N] [--threads N] [--records DIR]

The records are read once, before any timing, with the pure-Python reader in
common.py (no TensorFlow), and every feature id is precomputed into numpy
arrays: vocabulary lookups (out of vocabulary or missing: no id), hash
buckets (blake2b, not TensorFlow's Fingerprint64: any stable hash serves a
throughput benchmark), bucketized values, crosses (a hash of the crossed ids)
and z-scored numerics (mean and standard deviation from the training split).
The timed loop only gathers a shuffled batch of rows from those arrays and
trains on it; there is no record reading, parsing or hashing in it, which
favours PyTorch against dtf and Keras, whose timed loops do all of that.

The model:
  wide: one EmbeddingBag(ids + 1, 1, mode="sum", padding_idx=ids) per wide
        feature (TF's sparse linear weights; the padding row is the "no id"
        of a missing or out-of-vocabulary value) summed, plus a bias;
  deep: one EmbeddingBag(ids + 1, dim, mode=combiner, padding_idx=ids) per
        embedded feature, concatenated with the numerics, then Linear +
        activation + Dropout per hidden size and Linear(., 1);
  logit = wide + deep; BCEWithLogitsLoss.
Optimizers: torch.optim.Adagrad for the deep part (the job's learning rate,
initial_accumulator_value 0.1, eps 1e-7: Keras' defaults, as dtf's). PyTorch
has no FTRL, so the wide part uses torch.optim.Adagrad at the wide
optimizer's learning rate: per-coordinate accumulators like FTRL, with a
little less arithmetic per weight.

Prints one JSON object: tool, batch, steps, warmup, seconds (of the timed
steps only), examples_per_sec, loss (mean over the timed steps), threads,
other_cores_timed (cores other processes kept busy during the timed steps).
"""

import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def stable_hash(*parts):
    h = hashlib.blake2b(digest_size=8)
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\x00")
    return int.from_bytes(h.digest(), "little")


def one(row, column):
    values = row.get(column, [])
    return values[0] if values else None


def as_text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def featurize(job, rows):
    """Every feature's ids (pad = num_ids where a row has none), the
    normalized numerics and the labels, as numpy arrays."""
    n = len(rows)
    numeric = job.numeric()
    raw = {}
    for f in numeric:
        col = np.empty(n, np.float64)
        for i, row in enumerate(rows):
            v = one(row, f.source)
            if v is None:
                if f.default is None:
                    raise SystemExit(f"row {i} lacks {f.source}")
                v = f.default
            col[i] = float(v)
        raw[f.name] = col
    dense = np.empty((n, len(numeric)), np.float32)
    for j, f in enumerate(numeric):
        col = raw[f.name]
        if f.normalize:
            std = col.std()
            col = (col - col.mean()) / (std if std > 0 else 1.0)
        dense[:, j] = col

    ids = {}  # feature name -> int64[n], -1 for no id

    def source_values(name):
        g = job.by_name.get(name)
        if g is not None and g.kind in ("categorical", "hashed", "bucketized"):
            return ids[name]
        return [one(row, name) for row in rows]  # a raw column

    for f in job.ids_features():
        out = np.full(n, -1, np.int64)
        if f.kind == "categorical":
            index = {v: i for i, v in enumerate(f.vocabulary)}
            for i, row in enumerate(rows):
                v = one(row, f.source)
                if v is not None:
                    out[i] = index.get(as_text(v), -1)
        elif f.kind == "hashed":
            for i, row in enumerate(rows):
                v = one(row, f.source)
                if v is not None:
                    out[i] = stable_hash(as_text(v)) % f.buckets
        elif f.kind == "bucketized":
            src = job.by_name.get(f.source)
            if src is not None and src.kind == "numeric":
                values = raw[src.name]  # before normalize, as dtf does
            else:
                values = np.array([float(one(row, f.source)) for row in rows])
            out[:] = np.searchsorted(np.array(f.boundaries), values,
                                     side="right")
        elif f.kind == "crossed":
            inputs = [source_values(c) for c in f.columns]
            for i in range(n):
                parts = [x[i] for x in inputs]
                if any(p is None or (isinstance(p, (int, np.integer)) and p < 0)
                       for p in parts):
                    continue
                out[i] = stable_hash(*[as_text(p) if isinstance(p, bytes)
                                       else int(p) for p in parts]) % f.buckets
        ids[f.name] = out

    features = job.ids_features()
    matrix = np.empty((n, len(features)), np.int64)
    for j, f in enumerate(features):
        col = ids[f.name]
        matrix[:, j] = np.where(col < 0, f.num_ids(), col)  # pad row
    labels = np.array([float(one(row, job.label)) for row in rows], np.float32)
    return matrix, dense, labels


class WideDeep(nn.Module):
    def __init__(self, job):
        super().__init__()
        self.features = job.ids_features()
        self.wide_index = [j for j, f in enumerate(self.features) if f.wide]
        self.deep_index = [j for j, f in enumerate(self.features) if f.deep]
        self.wide = nn.ModuleList(
            nn.EmbeddingBag(self.features[j].num_ids() + 1, 1, mode="sum",
                            padding_idx=self.features[j].num_ids())
            for j in self.wide_index)
        for bag in self.wide:
            nn.init.zeros_(bag.weight)  # Keras' LinearModel starts at zero
        self.wide_bias = nn.Parameter(torch.zeros(1))
        self.embeddings = nn.ModuleList(
            nn.EmbeddingBag(self.features[j].num_ids() + 1,
                            self.features[j].embedding,
                            mode=self.features[j].combiner,
                            padding_idx=self.features[j].num_ids())
            for j in self.deep_index)
        self.numeric_index = [j for j, f in enumerate(job.numeric()) if f.deep]
        width = len(self.numeric_index) + sum(
            self.features[j].embedding for j in self.deep_index)
        activation = {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid,
                      "elu": nn.ELU, "selu": nn.SELU}[job.activation]
        layers = []
        for h in job.hidden:
            layers += [nn.Linear(width, h), activation()]
            if job.dropout > 0:
                layers.append(nn.Dropout(job.dropout))
            width = h
        layers.append(nn.Linear(width, 1))
        self.mlp = nn.Sequential(*layers)

    def wide_parameters(self):
        return list(self.wide.parameters()) + [self.wide_bias]

    def deep_parameters(self):
        return list(self.embeddings.parameters()) + list(self.mlp.parameters())

    def forward(self, ids, dense):
        wide = self.wide_bias
        for bag, j in zip(self.wide, self.wide_index):
            wide = wide + bag(ids[:, j:j + 1])
        deep_in = [dense[:, self.numeric_index]]
        for bag, j in zip(self.embeddings, self.deep_index):
            deep_in.append(bag(ids[:, j:j + 1]))
        return (wide + self.mlp(torch.cat(deep_in, dim=1))).squeeze(1)


def blas_library():
    """The BLAS library torch has mapped (Debian: the libblas.so.3
    alternative, reference BLAS or OpenBLAS)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "blas" in line}
    except OSError:
        return None
    paths = sorted(os.path.realpath(p) for p in paths if p.startswith("/"))
    return ", ".join(sorted(set(paths))) or None


def adagrad(params, options):
    return torch.optim.Adagrad(
        params, lr=float(options.get("learning_rate", 0.001)),
        initial_accumulator_value=float(
            options.get("initial_accumulator_value", 0.1)),
        eps=float(options.get("epsilon", 1e-7)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--job", required=True)
    p.add_argument("--records", help="records directory (default: the job's)")
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    job = common.Job(a.job)
    wanted = set(job.columns_read()) | {job.label}
    files = common.record_files(a.records or job.records)
    t = time.perf_counter()
    rows = list(common.read_examples(files, wanted))
    ids, dense, labels = featurize(job, rows)
    prep_seconds = time.perf_counter() - t
    n = len(rows)
    if n < a.batch_size:
        raise SystemExit(f"{n} rows, fewer than a batch of {a.batch_size}")

    torch.manual_seed(job.seed)
    rng = np.random.default_rng(job.seed)
    model = WideDeep(job)
    if job.wide_optimizer.get("type") not in ("ftrl", "adagrad", "sgd"):
        raise SystemExit(f"wide optimizer {job.wide_optimizer.get('type')}?")
    opts = [adagrad(model.wide_parameters(), job.wide_optimizer),
            adagrad(model.deep_parameters(), job.deep_optimizer)]
    loss_fn = nn.BCEWithLogitsLoss()
    ids_t = torch.from_numpy(ids)
    dense_t = torch.from_numpy(dense)
    labels_t = torch.from_numpy(labels)
    model.train()

    order, pos = rng.permutation(n), 0
    total = a.warmup + a.steps
    losses = []
    start, clock = time.perf_counter(), common.CpuClock()
    for step in range(total):
        if step == a.warmup:
            start, clock = time.perf_counter(), common.CpuClock()
        if pos + a.batch_size > n:  # a new epoch, reshuffled
            order, pos = rng.permutation(n), 0
        rows_b = torch.from_numpy(order[pos:pos + a.batch_size])
        pos += a.batch_size
        logits = model(ids_t.index_select(0, rows_b),
                       dense_t.index_select(0, rows_b))
        loss = loss_fn(logits, labels_t.index_select(0, rows_b))
        for o in opts:
            o.zero_grad(set_to_none=True)
        loss.backward()
        for o in opts:
            o.step()
        if step >= a.warmup:
            losses.append(loss.detach())
    seconds = time.perf_counter() - start
    other_cores = common.CpuClock().other_cores(clock)
    print(json.dumps({
        "tool": "pytorch", "batch": a.batch_size, "steps": a.steps,
        "warmup": a.warmup, "seconds": seconds,
        "examples_per_sec": a.steps * a.batch_size / seconds,
        "loss": float(torch.stack(losses).mean()) if losses else None,
        "threads": torch.get_num_threads(), "rows": n,
        "other_cores_timed": other_cores,
        "prep_seconds": prep_seconds,
        "versions": {"torch": torch.__version__, "numpy": np.__version__},
        "blas": blas_library(),
    }))


if __name__ == "__main__":
    main()
