#!/usr/bin/env python3
"""The train_step report: reads the figures run.sh left in WORK (its
settings come in the environment), prints the table and writes
WORK/results.json. Not meant to be run by hand."""

import datetime
import json
import os
import platform
import statistics

env = os.environ
work = env["work"]
threads, warmup = int(env["threads"]), int(env["warmup"])
repeats = int(env["repeats"])
batches = [int(b) for b in env["batch_sizes"].split(",")]
only = env["only"].split(",")
steps = {t: [int(s) for s in env[f"{t}_steps"].split(",")]
         for t in ("dtf", "keras", "torch")}
NAMES = {
    "dtf": "dtf train",
    "keras": "keras: feature columns + WideDeepModel",
    "torch": "pytorch (ids precomputed)",
}


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
        return json.load(f)


def with_cpu(run, *names):
    """Adds the CPU accounting of the processes NAMES (summed)."""
    cpus = [load(f"{n}.cpu") for n in names]
    run["process_wall_seconds"] = sum(c["wall"] for c in cpus)
    run["process_cpu_seconds"] = sum(c["cpu"] for c in cpus)
    run["other_cpu_seconds"] = sum(c["other_cpu"] for c in cpus)
    # Cores kept busy by everything else on the machine, on average.
    run["other_cores"] = run["other_cpu_seconds"] / run["process_wall_seconds"]
    return run


runs = []
for r in range(1, repeats + 1):
    for i, b in enumerate(batches):
        if "dtf" in only:
            name = f"dtf-b{b}-r{r}"
            m = load(f"{name}.json") or {}
            n = steps["dtf"][i]
            walls = [load(f"{name}-warmup.cpu")["wall"], load(f"{name}.cpu")["wall"]]
            seconds = walls[1] - walls[0]
            runs.append(with_cpu({
                "tool": "dtf", "batch": b, "repeat": r, "steps": n,
                "warmup": warmup, "seconds": seconds,
                "examples_per_sec": n * b / seconds if seconds > 0 else None,
                "loss": m.get("loss", m.get("train_loss")),
                "reported_examples_per_sec": m.get("examples_per_sec"),
                "metrics": m, "metrics_warmup_run": load(f"{name}-warmup.json"),
                "wall_seconds_warmup_and_full_run": walls,
            }, f"{name}-warmup", name))
        for tool in ("keras", "torch"):
            if tool in only:
                name = f"{tool}-b{b}-r{r}"
                run = load(f"{name}.json")
                run.update(tool=tool, repeat=r)
                runs.append(with_cpu(run, name))

# Per tool and batch: the best of the repeats (other work on the machine only
# ever slows a run down), with all of them kept.
summary = []
for b in batches:
    for tool in ("dtf", "keras", "torch"):
        mine = [r for r in runs if r["tool"] == tool and r["batch"] == b
                and r["examples_per_sec"]]
        if not mine:
            continue
        best = max(mine, key=lambda r: r["examples_per_sec"])
        eps = [r["examples_per_sec"] for r in mine]
        summary.append({
            "tool": tool, "batch": b, "steps": best["steps"],
            "seconds": best["seconds"],
            "examples_per_sec": best["examples_per_sec"],
            "best_repeat": best["repeat"],
            "all_examples_per_sec": eps,
            "median_examples_per_sec": statistics.median(eps),
            "loss": best.get("loss"),
            # The peers measure it over their timed steps; dtf's is over
            # its two whole processes.
            "other_cores": best.get("other_cores_timed", best["other_cores"]),
            "reported_examples_per_sec": best.get("reported_examples_per_sec"),
        })
by = {(s["tool"], s["batch"]): s for s in summary}
ratios = {}
for s in summary:
    d = by.get(("dtf", s["batch"]))
    if s["tool"] != "dtf" and d:
        ratios[f"dtf_vs_{s['tool']}_batch_{s['batch']}"] = (
            d["examples_per_sec"] / s["examples_per_sec"])

versions, blas = {}, None
for r in runs:
    versions.update(r.get("versions", {}))
    blas = r.get("blas", blas)
notes = [
    f"examples/s over the timed steps only, after {warmup} warm-up steps; "
    "each step a shuffled batch from the training split's TFRecords"
    + (f"; the best of {repeats} runs" if repeats > 1 else "") + ".",
    "dtf: the wall time of a run of warmup + steps steps minus that of a run "
    "of warmup steps (start-up, the first steps, checkpoint and export "
    "cancel out); dtf's own step-loop figure (all steps) is "
    "reported_examples_per_sec.",
    "keras: tf.data reads, decompresses and parses the gzip TFRecords inside "
    "the timed steps, as dtf does.",
    "pytorch: feature ids (vocabulary, hash, bucketize, crosses) and z-scores "
    "are precomputed in numpy before timing; its timed steps only gather rows "
    "and train. That favours PyTorch.",
    "pytorch: the wide part uses Adagrad (torch has no FTRL); the deep part "
    "Adagrad, as the job.",
    f"threads: {threads} for every tool (dtf --threads, TensorFlow intra- "
    "and inter-op threads, torch.set_num_threads).",
    "others: cores that other processes kept busy, on average, during the "
    "peers' timed steps and during dtf's two processes (0.00 on a quiet "
    "machine).",
]
results = {
    "benchmark": "train_step",
    "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                "kernel": platform.release(),
                "loadavg_before": env["load_before"],
                "loadavg_after": env["load_after"]},
    "job": os.path.join(work, "dtf.toml"),
    "threads": threads,
    "warmup_steps": warmup,
    "repeats": repeats,
    "versions": versions,
    "torch_blas": blas,
    "summary": summary,
    "ratios": ratios,
    "runs": runs,
    "notes": notes,
}
path = os.path.join(work, "results.json")
with open(path, "w") as f:
    json.dump(results, f, indent=2)
    f.write("\n")

print(f"train step: UCI Adult census wide & deep (examples/census/dtf.toml); "
      f"{threads} threads; {os.cpu_count()} cores, {cpu_model()}")
print(f"{'tool':<40} {'batch':>6} {'steps':>7} {'seconds':>8} "
      f"{'examples/s':>11} {'dtf/tool':>9} {'loss':>7} {'others':>7}")
for s in summary:
    d = by.get(("dtf", s["batch"]))
    ratio = ""
    if d and s["tool"] != "dtf":
        ratio = f"{d['examples_per_sec'] / s['examples_per_sec']:.1f}x"
    loss = s.get("loss")
    print(f"{NAMES[s['tool']]:<40} {s['batch']:>6} {s['steps']:>7} "
          f"{s['seconds']:>8.2f} {s['examples_per_sec']:>11,.0f} {ratio:>9} "
          f"{'' if loss is None else format(loss, '.4f'):>7} "
          f"{s['other_cores']:>7.2f}")
for s in summary:
    if s["tool"] == "dtf" and s.get("reported_examples_per_sec"):
        print(f"dtf batch {s['batch']}: its own step-loop figure "
              f"{s['reported_examples_per_sec']:,.0f} examples/s")
print()
for n in notes:
    print(f"- {n}")
print(f"load average before/after: {env['load_before']} / {env['load_after']}")
for s in summary:
    if s["seconds"] < float(env["min_seconds"]):
        print(f"warning: {s['tool']} batch {s['batch']} timed only "
              f"{s['seconds']:.1f} s; raise --{s['tool']}-steps")
    if s["other_cores"] > 0.1:
        print(f"warning: {s['tool']} batch {s['batch']}: other processes kept "
              f"{s['other_cores']:.2f} cores busy during its best run")
print(f"results: {path}")
