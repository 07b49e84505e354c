#!/usr/bin/env python3
"""Which source file of a directory uses which other file's functions, and the cycles.

    scripts/import-graph.py [--objects DIR] [--edges] [--calls] SRC_DIR

Reads the object files of a build (nm), maps every global symbol a file uses
to the file that defines it, and prints the file graph: one line per edge
("a.c -> b.c: f, g" with --edges), the cycles (strongly connected groups of
more than one file), and for each .c the project headers it includes, directly
or through other project headers, with their line count. The numbers are the
ones NOTES.txt ("Code layout") quotes.

Objects are found under --objects (default: SRC_DIR and SRC_DIR/.libs); an
object's source is the part of its name after the last '-' (automake names
objects <target>-<source>.o), so one source built into several programs counts
once. Build first (make). Exit 1 if there is a cycle, 0 otherwise.

  scripts/import-graph.py btl_ofi
  scripts/import-graph.py osc_harness
"""

import argparse
import collections
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
IGNORED = {"main"}


def object_files(dirs):
    found = {}
    for d in dirs:
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith(".o"):
                source = name[:-2].rsplit("-", 1)[-1] + ".c"
                found.setdefault(source, []).append(os.path.join(d, name))
    return found


def symbols(path):
    """(defined globals {name: is_function}, undefined symbols) of one object file."""
    out = subprocess.run(["nm", "-P", path], capture_output=True, text=True, check=True).stdout
    defined, used = {}, set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            used.add(name)
        elif kind.isupper() and name not in IGNORED:
            defined[name] = kind in "TW"
    return defined, used


def file_graph(objects, calls_only):
    """{user: {definer: symbols}}; calls_only: functions, not data (e.g. the component struct)."""
    defined, used = {}, {}
    for source, paths in objects.items():
        d, u = {}, set()
        for p in paths:
            pd, pu = symbols(p)
            d.update(pd)
            u |= pu
        defined[source], used[source] = d, u
    owner = {}
    for source, names in defined.items():
        for n, is_function in names.items():
            if is_function or not calls_only:
                owner.setdefault(n, source)
    edges = collections.defaultdict(lambda: collections.defaultdict(set))
    for source, names in used.items():
        for n in names:
            target = owner.get(n)
            if target and target != source:
                edges[source][target].add(n)
    return edges


def cycles(nodes, edges):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def headers_of(src_dir, name, seen=None):
    seen = set() if seen is None else seen
    path = os.path.join(src_dir, name)
    if not os.path.exists(path):
        return seen
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for inc in INCLUDE.findall(text):
        if inc not in seen and os.path.exists(os.path.join(src_dir, inc)):
            seen.add(inc)
            headers_of(src_dir, inc, seen)
    return seen


def line_count(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return sum(1 for _ in f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src_dir")
    ap.add_argument("--objects", action="append", help="directory of the object files")
    ap.add_argument("--edges", action="store_true", help="name the symbols of every edge")
    ap.add_argument("--calls", action="store_true",
                    help="functions only: leave out uses of another file's data")
    args = ap.parse_args()
    src = args.src_dir.rstrip("/")
    objects = object_files(args.objects or [src, os.path.join(src, ".libs")])
    objects = {s: p for s, p in objects.items() if os.path.exists(os.path.join(src, s))}
    if not objects:
        print(f"import-graph: no object files of {src}/*.c found: build first", file=sys.stderr)
        return 2
    edges = file_graph(objects, args.calls)
    found = cycles(objects, edges)
    nedges = sum(len(t) for t in edges.values())

    what = "function calls" if args.calls else "functions and data"
    print(f"{src}: {len(objects)} files, {nedges} file-to-file edges ({what})")
    for a in sorted(edges):
        for b in sorted(edges[a]):
            names = f": {', '.join(sorted(edges[a][b]))}" if args.edges else ""
            print(f"  {a} -> {b}{names}")
    cyc_files = sorted({f for c in found for f in c})
    print(f"cycles: {len(found)} ({len(cyc_files)} files)")
    for c in found:
        print("  " + " <-> ".join(c))
        for a in c:
            for b in c:
                if b in edges.get(a, {}):
                    print(f"    {a} -> {b}: {', '.join(sorted(edges[a][b]))}")
    print("project headers each file includes (lines):")
    total = 0
    for s in sorted(objects):
        hs = sorted(headers_of(src, s))
        n = sum(line_count(os.path.join(src, h)) for h in hs)
        total += n
        print(f"  {s:28s} {n:5d}  {' '.join(hs)}")
    print(f"  total {total}, mean {total / len(objects):.0f} per file")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
