#!/usr/bin/env python3
"""The bench/scaling report: reads what run.sh left in WORK (its settings
come in the environment), prints the tables, writes WORK/results.json and
draws the efficiency plot. Not meant to be run by hand."""

import datetime
import glob
import json
import os
import re

env = os.environ
work = env["work"]
cores, ps_cores = float(env["cores"]), float(env["ps_cores"])
models = env["models"].split(",")
modes = env["modes"].split(",")
counts = [int(n) for n in env["workers_list"].split(",")]

# "worker:1: 48840 examples in 1.5 s, 32505 examples/s" (cmd/serve.cc)
SUMMARY = re.compile(r"^worker:(\d+): (\d+) examples in ([0-9.]+) s, "
                     r"([0-9.]+) examples/s")
TF_PEER = {"sync": "ps", "async": "ps", "allreduce": "mwms"}
TF_NAME = {"ps": "ParameterServerStrategy", "mwms": "MultiWorkerMirroredStrategy"}


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def ok(run):
    return (read(f"{work}/{run}.rc") or "").strip() == "0"


def last_json(text):
    for line in reversed((text or "").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def quota(run):
    """Per host: quota cores, cores used, share of periods throttled."""
    out = []
    for line in (read(f"{work}/{run}.quota") or "").splitlines():
        f = line.split()
        if len(f) < 9:
            continue
        host, label, c, wall, periods, throttled = f[0], f[1], float(f[2]), \
            float(f[3]), int(f[4]), int(f[5])
        used = (float(f[7]) + float(f[8])) / wall if wall > 0 else 0.0
        out.append({"host": host, "task": label, "quota_cores": c,
                    "wall_seconds": wall, "used_cores": used,
                    "periods": periods, "throttled_periods": throttled,
                    "throttled_seconds": float(f[6])})
    return out


def dtf_one(model):
    run = f"dtf-{model}-one"
    m = last_json(read(f"{work}/{run}.json"))
    if not ok(run) or not m:
        return None
    return {"run": run, "examples_per_sec": m["examples_per_sec"],
            "accuracy": m.get("accuracy"), "quota": quota(run)}


def dtf_cluster(model, mode, n):
    run = f"dtf-{model}-{mode}-{n}"
    if not ok(run):
        return None
    examples, seconds = 0, 0.0
    for i in range(n):
        found = None
        for line in (read(f"{work}/{run}.logs/worker-{i}.log") or "").splitlines():
            m = SUMMARY.match(line.strip())
            if m and int(m.group(1)) == i:
                found = m
        if not found:
            return None
        examples += int(found.group(2))
        seconds = max(seconds, float(found.group(3)))
    chief = last_json(read(f"{work}/{run}.json")) or {}
    return {"run": run, "examples_per_sec": examples / seconds if seconds else 0,
            "examples": examples, "train_seconds": seconds,
            "accuracy": chief.get("accuracy"), "quota": quota(run)}


def tf_run(model, peer, n):
    run = f"tf-{model}-{peer}-{n}"
    label = "coordinator" if peer == "ps" else "worker-0"
    m = last_json(read(f"{work}/{run}.logs/{label}.log"))
    if not ok(run) or not m or "examples_per_sec" not in m:
        return None
    return {"run": run, "examples_per_sec": m["examples_per_sec"],
            "loss": m.get("loss"), "quota": quota(run)}


def fmt(v, spec):
    return "—" if v is None else format(v, spec)


results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "worker_cores": cores, "ps_cores": ps_cores,
           "ps": int(env["ps_count"]), "link": env["rate"],
           "period_us": int(env["period_us"]),
           "cgroup_version": int(env["HOSTS_CG_VERSION"]),
           "load_before": env["load_before"], "load_after": env["load_after"],
           "dtf": env["dtf_source"], "models": {}}
all_quota = []
for model in models:
    one = dtf_one(model)
    r = {"one": one, "dtf": {}, "tf": {}}
    results["models"][model] = r
    base = one["examples_per_sec"] if one else None
    print(f"\n{model}: one dtf process at {cores} cores: "
          f"{fmt(base, ',.0f')} examples/s, accuracy {fmt(one and one['accuracy'], '.4f')}")
    header = (f"{'mode':<10} {'workers':>7} {'examples/s':>11} {'efficiency':>10} "
              f"{'speed-up':>8} {'TF examples/s':>13} {'dtf/TF':>7} {'accuracy':>8}")
    print(header)
    print("-" * len(header))
    for mode in modes:
        for n in counts:
            d = dtf_cluster(model, mode, n)
            t = tf_run(model, TF_PEER[mode], n)
            r["dtf"][f"{mode}-{n}"] = d
            r["tf"][f"{TF_PEER[mode]}-{n}"] = t
            eps = d["examples_per_sec"] if d else None
            eff = eps / (n * base) if eps and base else None
            sp = eps / base if eps and base else None
            tf_eps = t["examples_per_sec"] if t else None
            vs = eps / tf_eps if eps and tf_eps else None
            if d:
                d.update(efficiency=eff, speedup=sp, vs_tf=vs)
            print(f"{mode:<10} {n:>7} {fmt(eps, ',.0f'):>11} {fmt(eff, '.2f'):>10} "
                  f"{fmt(sp, '.2f') + ('×' if sp else ''):>8} {fmt(tf_eps, ',.0f'):>13} "
                  f"{fmt(vs, '.1f') + ('×' if vs else ''):>7} "
                  f"{fmt(d and d['accuracy'], '.4f'):>8}")
            for x in (d, t):
                if x:
                    all_quota += [dict(q, run=x["run"]) for q in x["quota"]]
    if one:
        all_quota += [dict(q, run=one["run"]) for q in one["quota"]]
    print(f"(TensorFlow: {TF_NAME['ps']} beside sync and async, "
          f"{TF_NAME['mwms']} beside allreduce)")

failed = sorted(os.path.basename(p)[:-3] for p in glob.glob(f"{work}/*.rc")
                if (read(p) or "").strip() != "0")
if failed:
    print(f"\nfailed runs (see {work}/<run>.logs): {', '.join(failed)}")

# Quotas: every host's CPU use against its quota, and how often the
# scheduler held it back (cpu.stat). A quota holds when no host used more
# than it; the throttled periods show it biting where a task wanted more (a
# busy host not throttled used less than its quota: it waited, for a PS, a
# barrier or a machine with more runnable tasks than cores).
busy = [q for q in all_quota if q["used_cores"] > 0.5 * q["quota_cores"]]
over = max((q["used_cores"] / q["quota_cores"] for q in all_quota), default=0)
throttled = [q for q in busy if q["throttled_periods"] > 0]
results["quota"] = {"hosts": len(all_quota), "busy_hosts": len(busy),
                    "busy_hosts_throttled": len(throttled),
                    "max_used_over_quota": over}
enforced = bool(throttled) and over <= 1.05
print(f"\nCPU quotas (cgroup v{env['HOSTS_CG_VERSION']}, period "
      f"{int(env['period_us']) // 1000} ms): the most any host used over its run: "
      f"{over:.2f} of its quota; {len(throttled)} of {len(busy)} busy hosts "
      f"(over half their quota) throttled (cpu.stat nr_throttled > 0), the rest "
      f"below their quota -> quotas {'ENFORCED' if enforced else 'NOT shown to hold'}")
print(f"links: tbf {env['rate']} each way; no added latency (no netem)")
print(f"load average before {env['load_before']}, after {env['load_after']}")
results["quota_per_host"] = all_quota
with open(f"{work}/results.json", "w") as f:
    json.dump(results, f, indent=1)

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("no matplotlib: no plot")
    raise SystemExit(0)
fig, axes = plt.subplots(1, len(models), figsize=(5.5 * len(models), 4),
                         squeeze=False)
for ax, model in zip(axes[0], models):
    for mode in modes:
        pts = [(n, d["efficiency"]) for n in counts
               if (d := results["models"][model]["dtf"].get(f"{mode}-{n}"))
               and d.get("efficiency")]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=f"dtf {mode}")
    ax.axhline(0.9, color="grey", linestyle=":", linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_xticks(counts, [str(n) for n in counts])
    ax.set_ylim(0, 1.2)
    ax.set_xlabel(f"workers ({cores} cores each)")
    ax.set_ylabel("weak-scaling efficiency")
    ax.set_title(f"{model}: examples/s of N / (N x one process)")
    ax.legend(loc="lower left")
    ax.grid(alpha=0.3)
fig.tight_layout()
fig.savefig(env["plot"], dpi=100)
print(f"plot: {env['plot']}")
