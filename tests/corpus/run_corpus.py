#!/usr/bin/env python3
"""Runs the data corpus through dtf and a scikit-learn baseline.

    run_corpus.py --dtf PATH --work DIR [--cases a,b] [--json FILE]
                  [--train-args "ARGS"] [--keep]

For each case of make_corpus.py: writes its CSV files into WORK/NAME, runs

    dtf init WORK/NAME/job --from-csv TRAIN --eval-csv EVAL --label L
    dtf gen-records --job WORK/NAME/job/dtf.toml
    dtf train --job WORK/NAME/job/dtf.toml --metrics-out .../metrics.json

with the job as init wrote it, fits the baseline on the same training file
and scores both on the evaluation file. A "trains" case passes when dtf's
metric is at least the baseline's minus the case's margin; an "error" case
when the expected step exits non-zero with the expected message fragments
and place on standard error. Prints a table, writes it as JSON with --json,
and exits 1 when any case fails.
"""

import argparse
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_corpus  # noqa: E402

STDERR_TAIL_LINES = 25


class StepResult:
    def __init__(self, step, argv, rc, stdout, stderr, seconds):
        self.step, self.argv, self.rc = step, argv, rc
        self.stdout, self.stderr, self.seconds = stdout, stderr, seconds

    def describe(self):
        tail = self.stderr.strip().splitlines()[-STDERR_TAIL_LINES:]
        return (f"step {self.step} exited {self.rc}\n"
                f"  command: {shlex.join(self.argv)}\n"
                f"  stderr (last {len(tail)} lines):\n"
                + "\n".join("    " + line for line in tail))


def run_step(step, argv, cwd, timeout):
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True,
                           errors="replace", timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc = -1
        out = e.stdout or ""
        err = (e.stderr or "")
        out = out.decode(errors="replace") if isinstance(out, bytes) else out
        err = err.decode(errors="replace") if isinstance(err, bytes) else err
        err += f"\n(killed after {timeout} s)"
    return StepResult(step, argv, rc, out, err, time.monotonic() - t0)


# --- the baseline --------------------------------------------------------------


def read_frame(path, meta):
    import pandas as pd
    # Every column as text first: each role parses its own cells.
    return pd.read_csv(path, sep=meta["delimiter"], dtype=str,
                       keep_default_na=False, na_values=[])


MISSING = {"", "nan", "na", "null", "none", "?"}
TRUE_WORDS = {"true", "yes", "y", "1", "t"}
FALSE_WORDS = {"false", "no", "n", "0", "f"}


def to_number(series, meta):
    import pandas as pd

    def parse(cell):
        s = str(cell).strip()
        if s.lower() in MISSING:
            return math.nan
        if meta["decimal"] == ",":
            s = s.replace(".", "").replace(",", ".")
        else:
            s = s.replace(",", "")
        s = s.replace("$", "").replace("%", "")
        return float(s)

    return pd.to_numeric(series.map(parse), errors="raise")


def baseline_frame(df, meta):
    """Columns the baseline reads, by role; returns (frame, transformers)."""
    import pandas as pd
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    out = pd.DataFrame(index=df.index)
    numeric, categorical, text = [], [], []
    for col, role in meta["roles"].items():
        cells = df[col]
        if role == "id":
            continue
        if role in ("numeric", "currency"):
            out[col] = to_number(cells, meta)
            numeric.append(col)
        elif role == "bool":
            low = cells.str.strip().str.lower()
            out[col] = low.map(lambda v: 1.0 if v in TRUE_WORDS else (
                0.0 if v in FALSE_WORDS else math.nan))
            numeric.append(col)
        elif role == "categorical":
            out[col] = cells.str.strip().replace("", "(missing)")
            categorical.append(col)
        elif role == "text":
            out[col] = cells.fillna("")
            text.append(col)
        elif role.startswith("date:"):
            d = pd.to_datetime(cells, format=role[len("date:"):],
                               errors="coerce")
            out[f"{col}_month"] = d.dt.month.astype("Int64").astype(str)
            out[f"{col}_weekday"] = d.dt.day_of_week.astype("Int64").astype(str)
            categorical += [f"{col}_month", f"{col}_weekday"]
            out[f"{col}_days"] = (d - pd.Timestamp("1970-01-01")).dt.days
            numeric.append(f"{col}_days")
        else:
            raise ValueError(f"unknown role {role!r} of column {col!r}")
    transformers = []
    if numeric:
        transformers.append(("num", make_pipeline(
            SimpleImputer(strategy="median", add_indicator=True),
            StandardScaler()), numeric))
    if categorical:
        transformers.append(("cat", OneHotEncoder(handle_unknown="ignore"),
                             categorical))
    for col in text:
        transformers.append((f"text_{col}", TfidfVectorizer(
            ngram_range=(1, 2), min_df=2, sublinear_tf=True), col))
    return out, transformers


def labels(df, meta, mapping=None):
    """The label column as numbers, and a mask of rows that have one."""
    import numpy as np
    cells = df[meta["label"]].str.strip()
    has = ~cells.str.lower().isin(MISSING)
    if meta["task"] == "regression":
        return to_number(cells[has], meta).to_numpy(), has.to_numpy(), None
    if mapping is None:
        values = sorted(set(cells[has]))
        try:  # numbers in numeric order, as dtf maps them
            values = sorted(values, key=float)
        except ValueError:
            pass
        mapping = {v: i for i, v in enumerate(values)}
    y = cells[has].map(lambda v: mapping.get(v.rstrip("."), -1))
    return np.asarray(y, dtype=int), has.to_numpy(), mapping


def fit_baseline(meta, case_dir):
    """The baseline's metrics on the evaluation file, and the variance of
    that file's labels."""
    import numpy as np
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegressionCV, RidgeCV
    from sklearn.metrics import (accuracy_score, average_precision_score,
                                 r2_score, roc_auc_score)
    from sklearn.pipeline import make_pipeline

    train = read_frame(os.path.join(case_dir, meta["train"]), meta)
    evl = read_frame(os.path.join(case_dir, meta["eval"]), meta)
    y_train, has_train, mapping = labels(train, meta)
    y_eval, has_eval, _ = labels(evl, meta, mapping)
    x_train, transformers = baseline_frame(train[has_train], meta)
    x_eval, _ = baseline_frame(evl[has_eval], meta)
    pre = ColumnTransformer(transformers, sparse_threshold=1.0)
    if meta["task"] == "regression":
        model = make_pipeline(pre, RidgeCV(alphas=np.logspace(-3, 3, 13)))
        model.fit(x_train, y_train)
        pred = model.predict(x_eval)
        rmse = float(np.sqrt(np.mean((pred - y_eval) ** 2)))
        return ({"r2": float(r2_score(y_eval, pred)), "rmse": rmse},
                float(np.var(y_eval)))
    model = make_pipeline(pre, LogisticRegressionCV(
        Cs=[0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0], cv=3, max_iter=2000,
        scoring="roc_auc" if meta["task"] == "binary" else "accuracy"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(x_train, y_train)
    proba = model.predict_proba(x_eval)
    got = {"accuracy": float(accuracy_score(y_eval, proba.argmax(axis=1)))}
    if meta["task"] == "binary":
        got["auc"] = float(roc_auc_score(y_eval, proba[:, 1]))
        got["majority"] = float(max(np.mean(y_eval), 1 - np.mean(y_eval)))
        got["pr_auc"] = float(average_precision_score(y_eval, proba[:, 1]))
    return got, float(np.var(y_eval))


# --- one case ------------------------------------------------------------------


def place_pattern(place):
    """FILE:LINE as a regular expression: after a '/' or the start of a
    word, and not followed by another digit."""
    return re.compile(r"(?:^|[/\s'\"(])" + re.escape(place) + r"(?!\d)")


def check_error(meta, result):
    """None when RESULT is the expected error, else what differs."""
    want = meta["error"]
    if result.rc == 0:
        return f"{result.step} succeeded; expected an error"
    missing = [f for f in want["fragments"]
               if f.lower() not in result.stderr.lower()]
    problems = []
    if missing:
        problems.append("stderr lacks " + ", ".join(repr(f) for f in missing))
    if not place_pattern(want["place"]).search(result.stderr):
        problems.append(f"stderr does not name the place {want['place']!r}")
    if result.rc < 0 or result.rc > 128:
        problems.append(f"{result.step} crashed or was killed (rc {result.rc})")
    return "; ".join(problems) or None


def run_case(name, args, dtf):
    case_dir = os.path.join(args.work, name)
    shutil.rmtree(case_dir, ignore_errors=True)
    meta = make_corpus.make_case(args.work, name)
    row = {"case": name, "expect": meta["expect"], "metric": meta["metric"],
           "dtf": None, "sklearn": None, "margin": meta.get("margin"),
           "verdict": "FAIL", "detail": "", "init_s": None, "gen_s": None,
           "train_s": None, "failure": None}
    base = eval_var = None
    if meta["expect"] == "trains":
        # First, so that the table has the baseline when dtf fails.
        t = time.monotonic()
        base, eval_var = fit_baseline(meta, case_dir)
        row["sklearn"] = round(base[meta["metric"]], 4)
        row["sklearn_acc"] = base.get("accuracy")
        row["sklearn_metrics"] = base
        row["sklearn_s"] = round(time.monotonic() - t, 2)
    job = os.path.join(case_dir, "job")
    toml = os.path.join(job, "dtf.toml")
    metrics = os.path.join(job, "metrics.json")
    steps = [
        ("init", [dtf, "init", job, "--from-csv",
                  os.path.join(case_dir, meta["train"]), "--eval-csv",
                  os.path.join(case_dir, meta["eval"]), "--label",
                  meta["label"]] + meta.get("init_args", [])),
        ("gen-records", [dtf, "gen-records", "--job", toml]
         + meta.get("gen_records_args", [])),
        ("train", [dtf, "train", "--job", toml, "--metrics-out", metrics]
         + shlex.split(args.train_args) + meta.get("train_args", [])),
    ]
    seconds = {"init": "init_s", "gen-records": "gen_s", "train": "train_s"}
    for step, argv in steps:
        r = run_step(step, argv, case_dir, args.step_timeout)
        row[seconds[step]] = round(r.seconds, 2)
        if meta["expect"] == "error" and step in meta["error"]["steps"]:
            if r.rc == 0:
                continue  # a later expected step may refuse
            problem = check_error(meta, r)
            if problem is None:
                row["verdict"] = "pass"
                row["detail"] = f"{step}: " + first_error_line(r.stderr)
            else:
                row["detail"] = f"{step}: {problem}"
                row["failure"] = r.describe()
            return row
        if r.rc != 0:
            row["detail"] = f"{step} exited {r.rc}"
            row["failure"] = r.describe()
            if meta["expect"] == "error":
                row["detail"] += (f" (expected {'/'.join(meta['error']['steps'])}"
                                  " to refuse)")
            return row
    if meta["expect"] == "error":
        row["detail"] = (f"every step succeeded; expected "
                         f"{'/'.join(meta['error']['steps'])} to refuse "
                         f"at {meta['error']['place']}")
        row["failure"] = "\n".join(f"  command: {shlex.join(a)}"
                                   for _, a in steps)
        return row
    try:
        with open(metrics) as f:
            m = json.load(f)
    except (OSError, ValueError) as e:
        row["detail"] = f"train wrote no metrics: {e}"
        row["failure"] = f"  command: {shlex.join(steps[2][1])}"
        return row
    row["dtf_metrics"] = m
    if "accuracy" in m:
        row["dtf_acc"] = round(float(m["accuracy"]), 4)
    if meta["metric"] == "r2":
        if "rmse" not in m:
            row["detail"] = f"metrics.json has no rmse: {sorted(m)}"
            return row
        row["dtf"] = round(1.0 - float(m["rmse"]) ** 2 / eval_var, 4)
    else:
        if meta["metric"] not in m:
            row["detail"] = (f"metrics.json has no {meta['metric']}: "
                             f"{sorted(m)}")
            return row
        row["dtf"] = round(float(m[meta["metric"]]), 4)
    goal = base[meta["metric"]] - meta["margin"]
    ok = row["dtf"] >= goal and not math.isnan(row["dtf"])
    row["verdict"] = "pass" if ok else "FAIL"
    extra = ""
    if "accuracy" in m and meta["task"] == "binary":
        extra = (f"; accuracy dtf {float(m['accuracy']):.3f} sklearn "
                 f"{base['accuracy']:.3f} majority {base['majority']:.3f}")
    row["detail"] = (f"{meta['metric']} {row['dtf']:.4f} "
                     f"{'>=' if ok else '<'} {goal:.4f} (scikit-learn "
                     f"{base[meta['metric']]:.4f} - margin "
                     f"{meta['margin']}){extra}")
    absent = [k for k in meta.get("require_metrics", []) if k not in m]
    if absent:
        row["verdict"] = "FAIL"
        row["detail"] += f"; metrics.json lacks {', '.join(absent)}"
    if row["verdict"] != "pass":
        row["failure"] = (f"  job: {toml}\n"
                          f"  command: {shlex.join(steps[2][1])}\n"
                          f"  dtf metrics: {json.dumps(m, sort_keys=True)}\n"
                          f"  scikit-learn: {json.dumps(base, sort_keys=True)}")
    return row


def first_error_line(stderr):
    for line in stderr.splitlines():
        if line.strip():
            return line.strip()[:160]
    return ""


def fmt(v, digits=4):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def print_table(rows, out):
    cols = [("case", "case"), ("metric", "metric"), ("dtf", "dtf"),
            ("sklearn", "sklearn"), ("margin", "margin"),
            ("dtf_acc", "dtf acc"), ("sklearn_acc", "sk acc"),
            ("verdict", "verdict"), ("init_s", "init s"),
            ("gen_s", "gen s"), ("train_s", "train s")]
    cells = [[fmt(r.get(k), 2 if k.endswith("_s") else 4) if r["expect"] ==
              "trains" or k not in ("metric", "margin") else
              ("error" if k == "metric" else "-") for k, _ in cols]
             for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells))
              for i, (_, h) in enumerate(cols)]
    print("  ".join(h.ljust(w) for (_, h), w in zip(cols, widths)), file=out)
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths)), file=out)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtf", required=True, help="the dtf binary")
    p.add_argument("--work", required=True, help="work directory; each case's directory in it is replaced")
    p.add_argument("--cases", default="", help="comma-separated case names")
    p.add_argument("--json", default="", help="write the table here")
    p.add_argument("--train-args", default="",
                   help="extra arguments for every dtf train")
    p.add_argument("--step-timeout", type=int, default=180,
                   help="seconds one dtf command may run")
    a = p.parse_args(argv)
    names = [c for c in a.cases.split(",") if c] or list(make_corpus.CASES)
    unknown = [n for n in names if n not in make_corpus.CASES]
    if unknown:
        p.error(f"unknown case(s) {', '.join(unknown)}; cases: "
                f"{', '.join(make_corpus.CASES)}")
    dtf = os.path.abspath(a.dtf)
    a.work = os.path.abspath(a.work)
    os.makedirs(a.work, exist_ok=True)
    t0 = time.monotonic()
    rows = []
    for n in names:
        t = time.monotonic()
        try:
            row = run_case(n, a, dtf)
        except Exception as e:  # a broken case must not hide the others
            row = {"case": n, "expect": "?", "metric": "-", "dtf": None,
                   "sklearn": None, "margin": None, "verdict": "FAIL",
                   "detail": f"runner error: {type(e).__name__}: {e}",
                   "init_s": None, "gen_s": None, "train_s": None,
                   "failure": None}
        rows.append(row)
        print(f"[{row['verdict']}] {n} ({time.monotonic() - t:.1f} s): "
              f"{row['detail']}", flush=True)
        if row["verdict"] != "pass" and row.get("failure"):
            print(row["failure"], flush=True)
    total = time.monotonic() - t0
    print()
    print_table(rows, sys.stdout)
    failed = [r["case"] for r in rows if r["verdict"] != "pass"]
    print(f"\n{len(rows) - len(failed)}/{len(rows)} cases pass in "
          f"{total:.1f} s" + (f"; failed: {', '.join(failed)}" if failed
                              else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"dtf": dtf, "seconds": round(total, 1),
                       "train_args": a.train_args, "cases": rows}, f,
                      indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
