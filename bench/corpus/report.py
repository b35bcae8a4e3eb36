#!/usr/bin/env python3
"""Prints the corpus figures (run_corpus.py --json output) as Markdown.

    report.py RESULTS.json [--busy CORES] [--commit SHA]
"""

import argparse
import datetime
import json
import os
import platform


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def num(v, digits=3):
    return "-" if v is None else f"{v:.{digits}f}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("results")
    p.add_argument("--busy", default="?")
    p.add_argument("--commit", default="unknown")
    a = p.parse_args()
    with open(a.results) as f:
        res = json.load(f)
    print(f"dtf {a.commit}, {datetime.date.today().isoformat()}, "
          f"{cpu_model()} x {os.cpu_count()} ({a.busy} cores busy before), "
          f"corpus {res['seconds']} s"
          + (f", train args `{res['train_args']}`" if res["train_args"]
             else ", init defaults"))
    print()
    print("| case | metric | dtf | scikit-learn | dtf − sk | dtf acc | sk acc "
          "| verdict | init s | gen-records s | train s |")
    print("|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    for r in res["cases"]:
        if r["expect"] == "error":
            print(f"| {r['case']} | error | | | | | | {r['verdict']}: "
                  f"{r['detail'].replace('|', '/')} | {num(r['init_s'], 2)} "
                  f"| {num(r['gen_s'], 2)} | {num(r['train_s'], 2)} |")
            continue
        diff = (None if r["dtf"] is None or r["sklearn"] is None
                else r["dtf"] - r["sklearn"])
        verdict = r["verdict"]
        if verdict != "pass" and r["dtf"] is None:
            verdict += f": {r['detail'].replace('|', '/')}"
        print(f"| {r['case']} | {r['metric']} | {num(r['dtf'])} | "
              f"{num(r['sklearn'])} | {'-' if diff is None else f'{diff:+.3f}'}"
              f" | {num(r.get('dtf_acc'))} | {num(r.get('sklearn_acc'))} | "
              f"{verdict} | {num(r['init_s'], 2)} | {num(r['gen_s'], 2)} | "
              f"{num(r['train_s'], 2)} |")
    passed = sum(r["verdict"] == "pass" for r in res["cases"])
    print(f"\n{passed}/{len(res['cases'])} cases pass.")


if __name__ == "__main__":
    main()
