#!/usr/bin/env python3
"""The dependency graph of pbench's C modules: layers, circles, back edges.

A module is a .c file and its .h (bench/base/hist.c + bench/base/hist.h).
An edge A -> B is an #include of one of B's files by one of A's, or, given
a build folder, a call from A's object file into a name that B's object
file alone defines (nm), so a function declared in the wrong header still
counts where it is defined. A .c file with no header of its own (a stage,
a second file behind one header) is the inside of whatever header declares
its names, so calls into it are not edges of their own.

Each module is ranked by its folder, lowest first (RANKS below: the order
of docs/architecture.md); an edge from a lower rank to a higher one runs
back up. Circles are the strongly connected components of more than one
module. Layers are the longest chain of the graph with circles collapsed.

    scripts/include-graph.py [--build build] [--map MAPFILE] [-v]

--map gives a file of 'path folder' lines that ranks a flat tree's files
as if they stood in those folders (how the count before the move into
folders was made). Exits 1 when there is a circle or an edge that runs
back up, so it can gate (CI runs it).
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_DIRS = ["bench", "pipelines", "decoders", "kernels"]
# Lowest first: a module may depend on its own rank and those below it.
RANKS = ["bench/base", "kernels", "decoders", "pipelines", "bench/sys",
         "bench/result", "bench/analyze", "bench/config", "bench/run",
         "bench/report", "bench/session", "bench/cli"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def source_files():
    files = []
    for top in SOURCE_DIRS:
        for dirpath, dirnames, names in os.walk(os.path.join(ROOT, top)):
            rel = os.path.relpath(dirpath, ROOT)
            if rel.startswith("bench/peers"):
                continue
            for name in names:
                if name.endswith((".c", ".h", ".cu")):
                    files.append(os.path.join(rel, name))
    return sorted(files)


def module_of(path):
    return os.path.splitext(path)[0]


def folder_of(path, mapping):
    if path in mapping:
        return mapping[path]
    return os.path.dirname(path)


def rank_of(folder):
    best = None
    for i, r in enumerate(RANKS):
        if folder == r or folder.startswith(r + "/"):
            best = i
    return best


def symbol_edges(build, files):
    """Edges from undefined to defined symbols of pbench_core's objects."""
    objdir = os.path.join(build, "CMakeFiles", "pbench_core.dir")
    defined = {}
    undefined = {}
    for f in files:
        if not f.endswith((".c", ".cu")):
            continue
        obj = os.path.join(objdir, f + ".o")
        if not os.path.exists(obj):
            continue
        out = subprocess.run(["nm", "--defined-only", "-g", obj], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBRC":
                defined.setdefault(parts[2], set()).add(module_of(f))
        out = subprocess.run(["nm", "-u", obj], capture_output=True, text=True).stdout
        undefined[module_of(f)] = {l.split()[-1] for l in out.splitlines() if l.strip()}
    with_header = {module_of(f) for f in files if f.endswith(".h")}
    edges = set()
    for mod, names in undefined.items():
        for name in names:
            owners = defined.get(name, set())
            if len(owners) == 1:
                owner = next(iter(owners))
                if owner != mod and owner in with_header:
                    edges.add((mod, owner))
    return edges


def include_edges(files):
    known = {module_of(f) for f in files}
    edges = set()
    for f in files:
        with open(os.path.join(ROOT, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            target = module_of(inc)
            if target in known and target != module_of(f):
                edges.add((module_of(f), target))
    return edges


def circles(nodes, edges):
    """Tarjan's strongly connected components of more than one node."""
    succ = {n: [] for n in nodes}
    for a, b in edges:
        succ[a].append(b)
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ[v]:
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
            out.append(sorted(comp))

    for n in sorted(nodes):
        if n not in index:
            visit(n)
    return out


def layers(nodes, edges, comps):
    comp_of = {}
    for i, c in enumerate(comps):
        for n in c:
            comp_of[n] = i
    succ = {}
    for a, b in edges:
        if comp_of[a] != comp_of[b]:
            succ.setdefault(comp_of[a], set()).add(comp_of[b])
    depth = {}

    def d(c):
        if c not in depth:
            depth[c] = 1 + max((d(s) for s in succ.get(c, ())), default=0)
        return depth[c]

    return max((d(c) for c in range(len(comps))), default=0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", help="build folder whose object files give call edges")
    ap.add_argument("--map", help="file of 'path folder' lines for a flat tree")
    ap.add_argument("-v", action="store_true", help="list every back edge and circle")
    args = ap.parse_args()
    mapping = {}
    if args.map:
        with open(args.map) as fh:
            for line in fh:
                parts = line.split()
                if len(parts) == 2:
                    mapping[module_of(parts[0])] = parts[1]
    files = source_files()
    nodes = {module_of(f) for f in files}
    edges = include_edges(files)
    if args.build:
        edges |= symbol_edges(args.build, files)
    comps = circles(nodes, edges)
    loops = [c for c in comps if len(c) > 1]
    back = []
    for a, b in sorted(edges):
        ra = rank_of(folder_of(a, mapping))
        rb = rank_of(folder_of(b, mapping))
        if ra is not None and rb is not None and rb > ra:
            back.append((a, b))
    print(f"modules {len(nodes)}, edges {len(edges)}, layers {layers(nodes, edges, comps)}, "
          f"circles {len(loops)}, back edges {len(back)}")
    if args.v:
        for c in loops:
            print("circle: " + " ".join(c))
        for a, b in back:
            print(f"back edge: {a} -> {b}")
    return 1 if loops or back else 0


if __name__ == "__main__":
    sys.exit(main())
