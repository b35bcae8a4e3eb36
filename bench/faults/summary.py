"""Summary of the runs: one row a cell, and the Markdown table of
bench/README.md ("faults")."""


def summarize(records):
    by = {}
    for r in records:
        by.setdefault(r["cell"], []).append(r)
    rows = []
    for cell, rs in by.items():
        outcomes = {}
        for r in rs:
            outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
        accs = [r["accuracy"] for r in rs if r.get("accuracy") is not None
                and r["outcome"] == "completed"]
        # A worker added (`dtf scale`): seconds until it stepped.
        joined = "joined_s" in rs[0]
        rec = [r.get("joined_s" if joined else "recover_s") for r in rs]
        rec = [x for x in rec if x is not None]
        fail = [r["to_failure_s"] for r in rs if r.get("to_failure_s")
                is not None]
        errors = sorted({r["error"] for r in rs if r.get("error")})
        ck = [r.get("checkpoints") or {} for r in rs]
        # Examples never read and read twice, over the completed runs
        # (bench/faults/examples.py).
        ex = [r["examples"] for r in rs if r["outcome"] == "completed"
              and (r.get("examples") or {}).get("traces")]
        rows.append({
            "cell": cell,
            "runs": len(rs),
            "max_restarts": rs[0]["max_restarts"],
            "outcomes": outcomes,
            "accuracy_min": min(accs) if accs else None,
            "accuracy_max": max(accs) if accs else None,
            "recover_s_median": sorted(rec)[len(rec) // 2] if rec else None,
            "recover_s_max": max(rec) if rec else None,
            "joined": joined,
            "to_failure_s_max": max(fail) if fail else None,
            "left_max": max(r.get("left", 0) for r in rs),
            "checkpoints_intact": f"{sum(c.get('intact', 0) for c in ck)}/"
                                  f"{sum(c.get('files', 0) for c in ck)}",
            "never_max": max((e["never"] for e in ex), default=None),
            "twice_max": max((e["twice"] for e in ex), default=None),
            "traced_runs": len(ex),
            "restarts": sum(r.get("restarts") or 0 for r in rs),
            "killed_after_grace": sum(len(r.get("killed_after_grace") or [])
                                      for r in rs),
            "errors": errors,
            "verdicts": {v: sum(1 for r in rs if r["verdict"] == v)
                         for v in sorted({r["verdict"] for r in rs})},
        })
    return rows


def fmt(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def table(rows):
    out = ["| cell | runs | max_restarts | outcome | accuracy | "
           "recover s (median / max) | to failure s (max) | restarts | "
           "SIGKILLed after grace | left | checkpoints intact | "
           "examples never / twice read (max) | verdict |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | "
           "--- | --- | --- |"]
    for r in rows:
        outcome = ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"]
                                                          .items()))
        acc = "-" if r["accuracy_min"] is None else (
            f"{r['accuracy_min']:.4f}" if r["accuracy_min"] ==
            r["accuracy_max"] else
            f"{r['accuracy_min']:.4f}–{r['accuracy_max']:.4f}")
        rec = "-" if r["recover_s_median"] is None else \
            f"{fmt(r['recover_s_median'])} / {fmt(r['recover_s_max'])}" + (
                " (added worker's first step)" if r.get("joined") else "")
        seen = "-" if r["never_max"] is None else (
            f"{r['never_max']} / {r['twice_max']}")
        verdicts = r["verdicts"]
        verdict = "pass" if list(verdicts) == ["pass"] else ", ".join(
            f"{v} ({n} of {r['runs']})" for v, n in verdicts.items())
        out.append(f"| {r['cell']} | {r['runs']} | {r['max_restarts']} | "
                   f"{outcome} | {acc} | {rec} | {fmt(r['to_failure_s_max'])}"
                   f" | {r['restarts']} | {r['killed_after_grace']}"
                   f" | {r['left_max']} | {r['checkpoints_intact']} | "
                   f"{seen} | {verdict} |")
    return "\n".join(out)


