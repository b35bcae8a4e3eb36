#!/usr/bin/env python3
"""The cluster_train report: reads the figures run.sh left in WORK (its
settings come in the environment), prints the table and writes
WORK/results.json. Not meant to be run by hand."""

import datetime
import glob
import json
import os
import platform
import re
import statistics

env = os.environ
work = env["work"]
threads, batch, epochs = int(env["threads"]), int(env["batch"]), int(env["epochs"])
repeats = int(env["repeats"])
tf_epochs, tf_epoch_steps = int(env["tf_epochs"]), int(env["tf_epoch_steps"])
only = env["only"].split(",")
layouts = [tuple(int(n) for n in l.split(":")) for l in env["layouts"].split(",")]
# Allreduce layouts: worker counts (no parameter servers).
allreduce = [int(w) for w in env.get("allreduce", "").split(",") if w]
GOAL = 0.70  # dtf 1 PS + 1 worker / dtf in one process

# "worker:1: 48840 examples in 1.5 s, 32505 examples/s" (cmd/serve.cc)
SUMMARY = re.compile(r"^(?:\[worker:\d+\]\s+)?worker:(\d+): (\d+) examples in "
                     r"([0-9.]+) s, ([0-9.]+) examples/s")


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def load(name):
    path = os.path.join(work, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        text = f.read().strip()
    if name.endswith(".json"):
        # The TF peer prints one JSON object, last.
        text = text.splitlines()[-1] if text else ""
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return None
    return text


def with_cpu(run, name):
    c = json.loads(load(f"{name}.cpu"))
    run["process_wall_seconds"] = c["wall"]
    run["process_cpu_seconds"] = c["cpu"]
    run["other_cpu_seconds"] = c["other_cpu"]
    # Cores kept busy by everything else on the machine, on average.
    run["other_cores"] = c["other_cpu"] / c["wall"] if c["wall"] > 0 else 0.0
    return run


def worker_summaries(run_id, workers):
    """Each worker's summary line, from its files in the run directory."""
    found = {}
    for i in range(workers):
        for stream in ("stderr", "stdout"):
            path = os.path.join(work, ".dtf", "runs", run_id, f"worker-{i}", stream)
            if not os.path.exists(path):
                continue
            with open(path, errors="replace") as f:
                for line in f:
                    m = SUMMARY.match(line.strip())
                    if m and int(m.group(1)) == i:
                        found[i] = {"examples": int(m.group(2)),
                                    "train_seconds": float(m.group(3)),
                                    "examples_per_sec": float(m.group(4)),
                                    "source": f"worker-{i}/{stream}"}
    return [found.get(i) for i in range(workers)]


runs, failures = [], []
for r in range(1, repeats + 1):
    if "dtf" in only:
        name = f"dtf-train-r{r}"
        m = load(f"{name}.json")
        if load(f"{name}.rc") == "0" and m:
            runs.append(with_cpu({
                "setup": "dtf-train", "ps": 0, "workers": 1, "repeat": r,
                "examples_per_sec": m["examples_per_sec"],
                "per_worker": [m["examples_per_sec"]],
                "examples": m["examples"], "train_seconds": m["train_seconds"],
                "loss": m.get("train_loss"), "metrics": m}, name))
        else:
            failures.append(f"{name}: see {work}/{name}.log")
        launches = [("dtf-launch", ps, workers, f"dtf-launch-{ps}-{workers}-r{r}")
                    for ps, workers in layouts]
        launches += [("dtf-allreduce", 0, workers, f"dtf-allreduce-{workers}-r{r}")
                     for workers in allreduce]
        for setup, ps, workers, name in launches:
            m, run_id = load(f"{name}.json"), load(f"{name}.run")
            if load(f"{name}.rc") != "0" or not m or not run_id:
                failures.append(f"{name}: see {work}/{name}.log")
                continue
            lines = worker_summaries(run_id, workers)
            per_worker = []
            for i, s in enumerate(lines):
                if i == 0:
                    # The chief's metrics: the same figure, unrounded.
                    per_worker.append(m["examples_per_sec"])
                elif s is not None:
                    per_worker.append(s["examples_per_sec"])
                else:
                    per_worker.append(None)
            missing = [i for i, v in enumerate(per_worker) if v is None]
            if missing:
                failures.append(f"{name}: no summary line from worker(s) "
                                f"{missing} in {work}/.dtf/runs/{run_id}")
                continue
            runs.append(with_cpu({
                "setup": setup, "ps": ps, "workers": workers, "repeat": r,
                "run_id": run_id,
                "examples_per_sec": sum(per_worker), "per_worker": per_worker,
                "worker_summaries": lines, "chief_metrics": m,
                "loss": m.get("train_loss"),
                "eval": {k: m.get(k) for k in ("loss", "accuracy", "auc")},
            }, name))
    if "tf" in only:
        for ps, workers in layouts:
            name = f"tf-ps-{ps}-{workers}-r{r}"
            m = load(f"{name}.json")
            if load(f"{name}.rc") != "0" or not m:
                failures.append(f"{name}: see {work}/{name}.log and "
                                f"{work}/{name}.tasks/")
                continue
            m = dict(m)
            total = m.pop("examples_per_sec")
            runs.append(with_cpu(dict(m, **{
                "setup": "tf-ps", "ps": ps, "workers": workers, "repeat": r,
                "examples_per_sec": total,
                # The coordinator hands each step to whichever worker is
                # free; no per-worker count: the mean.
                "per_worker": [total / workers] * workers,
                "per_worker_is_mean": True,
            }), name))
        for workers in allreduce:
            name = f"tf-mwms-{workers}-r{r}"
            m = load(f"{name}.json")
            if load(f"{name}.rc") != "0" or not m:
                failures.append(f"{name}: see {work}/{name}.log and "
                                f"{work}/{name}.tasks/")
                continue
            m = dict(m)
            total = m.pop("examples_per_sec")
            runs.append(with_cpu(dict(m, **{
                "setup": "tf-mwms", "ps": 0, "workers": workers, "repeat": r,
                "examples_per_sec": total,
                # Every worker takes every step (synchronous): the mean.
                "per_worker": [total / workers] * workers,
                "per_worker_is_mean": True,
            }), name))

# Per setup: the best of the repeats (other work on the machine only ever
# slows a run down), with all of them kept.
summary = []
setups = [("dtf-train", 0, 1)] + [("dtf-launch", p, w) for p, w in layouts] + \
    [("tf-ps", p, w) for p, w in layouts] + \
    [("dtf-allreduce", 0, w) for w in allreduce] + \
    [("tf-mwms", 0, w) for w in allreduce]
for setup, ps, workers in setups:
    mine = [r for r in runs if (r["setup"], r["ps"], r["workers"]) ==
            (setup, ps, workers)]
    if not mine:
        continue
    best = max(mine, key=lambda r: r["examples_per_sec"])
    eps = [r["examples_per_sec"] for r in mine]
    summary.append({
        "setup": setup, "ps": ps, "workers": workers,
        "examples_per_sec": best["examples_per_sec"],
        "per_worker": best["per_worker"],
        "best_repeat": best["repeat"],
        "all_examples_per_sec": eps,
        "median_examples_per_sec": statistics.median(eps),
        "other_cores": best["other_cores"],
        "loss": best.get("loss"),
    })
by = {(s["setup"], s["ps"], s["workers"]): s for s in summary}
one = by.get(("dtf-train", 0, 1))
for s in summary:
    s["vs_dtf_one_process"] = (s["examples_per_sec"] / one["examples_per_sec"]
                               if one else None)
    peer = {"dtf-launch": "tf-ps", "dtf-allreduce": "tf-mwms"}.get(s["setup"])
    if peer:
        t = by.get((peer, s["ps"], s["workers"]))
        s["dtf_vs_tf"] = s["examples_per_sec"] / t["examples_per_sec"] if t else None

goal = None
first = by.get(("dtf-launch", 1, 1))
if one and first:
    ratio = first["examples_per_sec"] / one["examples_per_sec"]
    goal = {"what": "dtf 1 PS + 1 worker keeps at least 70% of one-process "
                    f"dtf's examples/s at batch {batch}",
            "ratio": ratio, "target": GOAL, "met": ratio >= GOAL}

versions = {}
for r in runs:
    versions.update(r.get("versions", {}))
notes = [
    f"dtf: {epochs} epochs of the training split (32,561 examples) at batch "
    f"{batch}; examples_per_sec is dtf's own figure: its training steps only "
    "(input, pull, compute, push), the time of evaluation, start-up, "
    "checkpoint and export excluded.",
    "dtf train: --no-eval; dtf launch: evaluation on (after every epoch, on "
    "the chief), sync mode (the job's default). Per worker: the chief's "
    "examples_per_sec (--metrics-out), every other worker's from its summary "
    "line in WORK/.dtf/runs/<id>/worker-<i>/stderr; total = their sum. In "
    "sync mode a worker's step also waits for the other workers' pushes, so "
    "the other workers' step time includes the chief's evaluations.",
    f"tensorflow: ParameterServerStrategy + ClusterCoordinator (model.fit), "
    f"{tf_epochs} timed Keras epochs of {tf_epoch_steps} steps after one "
    "warm-up epoch, every step a closure on a free worker (asynchronous "
    "updates: TF's PS strategy has no sync mode); a coordinator process "
    "besides the PS and workers; per worker = total / workers.",
    "allreduce (no parameter servers): dtf launch with train.mode = "
    "allreduce, train.device = cpu (Gloo's TCP ring between the workers, "
    "every worker at batch " + str(batch) + ", evaluation on the chief); "
    f"tensorflow: MultiWorkerMirroredStrategy (RING collectives over gRPC), "
    f"model.fit in every worker at {batch} examples per worker and step, "
    f"{tf_epochs} timed epochs of {tf_epoch_steps} steps after one warm-up "
    "epoch; per worker = total / workers.",
    f"threads: {threads} per process for every task of every tool (dtf "
    "train.threads; TF intra-op threads, inter-op at least workers + 1).",
    "others: cores kept busy by other processes during the run, on average.",
]
results = {
    "benchmark": "cluster_train",
    "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                "kernel": platform.release(),
                "loadavg_before": env["load_before"],
                "loadavg_after": env["load_after"]},
    "job": os.path.join(work, "dtf.toml"),
    "dtf": {"binary": env["dtf_source"], "built": env["dtf_built"],
            "sha256": env["dtf_sha256"]},
    "batch": batch, "epochs": epochs, "threads": threads, "repeats": repeats,
    "tf_epochs": tf_epochs, "tf_epoch_steps": tf_epoch_steps,
    "versions": versions,
    "summary": summary,
    "goal": goal,
    "failures": failures,
    "runs": runs,
    "notes": notes,
}
path = os.path.join(work, "results.json")
with open(path, "w") as f:
    json.dump(results, f, indent=2)
    f.write("\n")


def setup_name(s):
    if s["setup"] == "dtf-train":
        return "dtf train (1 process)"
    if s["setup"] in ("dtf-allreduce", "tf-mwms"):
        tool = "dtf allreduce, " if s["setup"] == "dtf-allreduce" else "tf MWMS, "
        return tool + f"{s['workers']} CPU workers"
    layout = (f"{s['ps']} PS + {s['workers']} worker"
              + ("s" if s["workers"] > 1 else ""))
    return ("dtf launch, " if s["setup"] == "dtf-launch" else "tf PS strategy, ") + layout


def per_worker(s):
    values = s["per_worker"]
    if s["setup"] in ("tf-ps", "tf-mwms") and len(values) > 1:
        return f"{values[0]:,.0f} (mean)"
    return " / ".join(f"{v:,.0f}" for v in values)


print(f"cluster train: UCI Adult census wide & deep (examples/census/dtf.toml), "
      f"batch {batch}; {threads} threads per process; {os.cpu_count()} cores, "
      f"{cpu_model()}")
print(f"{'setup':<34} {'examples/s':>11} {'per worker':>17} {'/ 1 proc':>9} "
      f"{'dtf / tf':>9} {'others':>7}")
for s in summary:
    ratio = s.get("dtf_vs_tf")
    print(f"{setup_name(s):<34} {s['examples_per_sec']:>11,.0f} "
          f"{per_worker(s):>17} {s['vs_dtf_one_process'] or 0:>8.2f}x "
          f"{'' if ratio is None else format(ratio, '.1f') + 'x':>9} "
          f"{s['other_cores']:>7.2f}")
print()
if goal:
    print(f"goal: dtf 1 PS + 1 worker / dtf in one process = {goal['ratio']:.0%} "
          f"(target >= {GOAL:.0%}): {'met' if goal['met'] else 'NOT met'}")
for n in notes:
    print(f"- {n}")
if repeats > 1:
    print(f"- the best of {repeats} runs each; every run in results.json")
print(f"load average before/after: {env['load_before']} / {env['load_after']}")
for s in summary:
    if s["other_cores"] > 0.1:
        print(f"warning: {setup_name(s)}: other processes kept "
              f"{s['other_cores']:.2f} cores busy during its best run")
for f in failures:
    print(f"FAILED: {f}")
print(f"results: {path}")
