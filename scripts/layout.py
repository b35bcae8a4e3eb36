#!/usr/bin/env python3
"""The shape of dtf's source tree, read from its #include lines.

Usage: scripts/layout.py [--root DIR] [--check] [--json]

A module is a header and its source file (foo.h + foo.cc). Inside each
folder of lib/ and cmd/, the modules and the includes between them form a
graph; this prints, per folder:
  files     .h/.cc/.cu files directly in the folder
  floors    the longest include chain (loops counted as one floor)
  loops     groups of modules that include each other, however indirectly
  back      includes that run back up: edges that close a loop
Between sibling folders under one parent (lib/runtime/train and
lib/runtime/ps, "lib/runtime/*"), the same is done with folders as the
modules; and each top folder with everything below it ("lib/launch/**") is
one graph of modules, where a loop that passes through two folders shows.

It also lists functions over 120 lines and files over 600 lines.
--check exits 1 when any folder has a loop or a back arrow, or a function or
file is over its limit.
"""
import argparse
import functools
import json
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE_EXT = (".h", ".cc", ".cu", ".cuh")
MAX_FUNCTION = 120
MAX_FILE = 600


def source_files(root):
    out = []
    for top in ("lib", "cmd"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(SOURCE_EXT):
                    out.append(os.path.relpath(os.path.join(dirpath, name), root))
    return out


def module_of(path):
    """A header and its source are one module: foo.h, foo.cc -> foo."""
    return os.path.splitext(path)[0]


@functools.lru_cache(maxsize=None)
def includes_of(root, path):
    found = []
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        for line in f:
            m = INCLUDE.match(line)
            if m:
                found.append(m.group(1))
    return tuple(found)


def strongly_connected(nodes, edges):
    """Tarjan's algorithm; returns a list of sets."""
    index = {}
    low = {}
    stack = []
    on_stack = set()
    groups = []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(edges.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.add(w)
                    if w == node:
                        break
                groups.append(group)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return groups


def back_edges(nodes, edges):
    """Edges that a depth-first walk finds pointing at a node on its stack."""
    state = {}
    back = []
    for start in sorted(nodes):
        if start in state:
            continue
        state[start] = 1
        work = [(start, iter(sorted(edges.get(start, ()))))]
        while work:
            node, it = work[-1]
            for w in it:
                if state.get(w) == 1:
                    back.append((node, w))
                elif w not in state:
                    state[w] = 1
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
            else:
                state[node] = 2
                work.pop()
    return back


def floors(nodes, edges, groups):
    group_of = {}
    for i, g in enumerate(groups):
        for v in g:
            group_of[v] = i
    dag = {}
    for u in nodes:
        for v in edges.get(u, ()):
            a, b = group_of[u], group_of[v]
            if a != b:
                dag.setdefault(a, set()).add(b)
    depth = {}

    def height(g):
        if g in depth:
            return depth[g]
        depth[g] = 1
        best = 1
        for h in dag.get(g, ()):
            best = max(best, 1 + height(h))
        depth[g] = best
        return best

    sys.setrecursionlimit(10000)
    return max((height(i) for i in range(len(groups))), default=0)


def analyse_graph(nodes, edges):
    groups = strongly_connected(nodes, edges)
    loops = [sorted(g) for g in groups if len(g) > 1]
    return {
        "floors": floors(nodes, edges, groups),
        "loops": loops,
        "back": sorted(back_edges(nodes, edges)),
    }


def folder_report(root, files):
    by_folder = {}
    for path in files:
        by_folder.setdefault(os.path.dirname(path), []).append(path)
    report = {}
    # Modules inside each folder.
    for folder, paths in sorted(by_folder.items()):
        nodes = {module_of(p) for p in paths}
        edges = {}
        for p in paths:
            for inc in includes_of(root, p):
                if os.path.dirname(inc) != folder:
                    continue
                target = module_of(inc)
                source = module_of(p)
                if target in nodes and target != source:
                    edges.setdefault(source, set()).add(target)
        entry = analyse_graph(nodes, edges)
        entry["files"] = len(paths)
        entry["lines"] = sum(count_lines(root, p) for p in paths)
        report[folder] = entry
    # Sibling folders under one parent (lib/runtime/train, lib/runtime/ps):
    # folders as the modules.
    folders = sorted(by_folder)
    for parent in sorted({os.path.dirname(f) for f in folders}):
        children = [f for f in folders if os.path.dirname(f) == parent]
        if len(children) < 2:
            continue
        nodes = set(children)
        edges = {}
        for child in children:
            for p in files:
                if not p.startswith(child + "/"):
                    continue
                for inc in includes_of(root, p):
                    d = os.path.dirname(inc)
                    for other in children:
                        if other != child and (d == other or d.startswith(other + "/")):
                            edges.setdefault(child, set()).add(other)
        entry = analyse_graph(nodes, edges)
        report[parent + "/*"] = entry
    # Each top folder (lib/launch and all below it) as one graph of modules:
    # a loop through two folders, as a parent's module that includes a
    # child's that includes it back, shows here.
    for top in sorted({"/".join(f.split("/")[:2]) for f in folders}):
        paths = [p for p in files if p.startswith(top + "/")]
        nodes = {module_of(p) for p in paths}
        edges = {}
        for p in paths:
            for inc in includes_of(root, p):
                target = module_of(inc)
                source = module_of(p)
                if target in nodes and target != source:
                    edges.setdefault(source, set()).add(target)
        entry = analyse_graph(nodes, edges)
        # Loops inside one folder are already reported there.
        entry["loops"] = [l for l in entry["loops"]
                          if len({os.path.dirname(m) for m in l}) > 1]
        entry["back"] = [(a, b) for a, b in entry["back"]
                         if os.path.dirname(a) != os.path.dirname(b)]
        report[top + "/**"] = entry
    return report


@functools.lru_cache(maxsize=None)
def count_lines(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        return sum(1 for _ in f)


SIGNATURE_START = re.compile(r"^[A-Za-z_~].*")
NOT_FUNCTION = re.compile(
    r"^(namespace|class|struct|enum|union|extern|template\s*<[^>]*>\s*(class|struct))\b")


def long_functions(root, files):
    """Top-level function definitions (Google style: bodies close at column 0)."""
    found = []
    for path in files:
        if not path.endswith((".cc", ".cu", ".h")):
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            if (SIGNATURE_START.match(line) and not NOT_FUNCTION.match(line)
                    and "(" in line and not line.rstrip().endswith(";")):
                # The signature runs until a line ending in "{" at depth 0.
                j = i
                while j < len(lines) and not lines[j].rstrip().endswith("{"):
                    if lines[j].rstrip().endswith(";") or (j > i and lines[j] == ""):
                        j = -1
                        break
                    j += 1
                if j == -1 or j >= len(lines):
                    i += 1
                    continue
                k = j + 1
                while k < len(lines) and lines[k] != "}" and not lines[k].startswith("}"):
                    k += 1
                length = k - i + 1
                name = re.split(r"\(", line)[0].split()[-1] if "(" in line else line
                if length > MAX_FUNCTION:
                    found.append((length, path, i + 1, name))
                i = k + 1
                continue
            i += 1
    return sorted(found, reverse=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    files = source_files(root)
    report = folder_report(root, files)
    functions = long_functions(root, files)
    big_files = sorted(((n, p) for p in files
                        if (n := count_lines(root, p)) > MAX_FILE), reverse=True)
    if args.json:
        json.dump({"folders": report,
                   "long_functions": functions,
                   "long_files": big_files}, sys.stdout, indent=1)
        print()
    else:
        print(f"{'folder':<28} {'files':>5} {'lines':>6} {'floors':>6} {'loops':>5} {'back':>4}")
        for folder, e in report.items():
            print(f"{folder:<28} {e.get('files', ''):>5} {e.get('lines', ''):>6} "
                  f"{e['floors']:>6} {len(e['loops']):>5} "
                  f"{len(e['back']):>4}")
        for folder, e in report.items():
            for loop in e["loops"]:
                print(f"loop in {folder}: {' '.join(os.path.basename(m) for m in loop)}")
            for a, b in e["back"]:
                print(f"back arrow in {folder}: {a} -> {b}")
        print(f"functions over {MAX_FUNCTION} lines: {len(functions)}")
        for length, path, line, name in functions:
            print(f"  {length:4} {path}:{line} {name}")
        print(f"files over {MAX_FILE} lines: {len(big_files)}")
        for n, p in big_files:
            print(f"  {n:4} {p}")
    if args.check:
        # The "lib/x/**" rows are for reading: a header and its source count
        # as one module there, so a source that dispatches to a child
        # folder whose header includes the parent's shows as a loop.
        bad = any(e["loops"] or e["back"] for f, e in report.items()
                  if not f.endswith("/**"))
        if bad or functions or big_files:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
