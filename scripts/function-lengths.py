#!/usr/bin/env python3
"""Lists pbench's C functions longer than a limit (default 100 lines), and
its C files longer than a file limit (default 1000 lines).

A function runs from the line of its name to its closing brace at the
start of a line, as the tree's style writes them. Exits 1 when any
function or file is longer, so it can gate. The folders are the product's
(bench, pipelines, decoders, kernels); tests/ is not held to the file
limit: a module's test file holds its cases side by side. Some files have
a tighter limit of their own (OWN_LIMITS): bench/cli/main.c, the command
line's entry, stays a dispatcher of at most 500 lines.

    scripts/function-lengths.py [--limit 100] [--file-limit 1000] [--top N] [folders...]
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OWN_LIMITS = {"bench/cli/main.c": 500}
START = re.compile(r'^[A-Za-z_][^;=()]*?\b([A-Za-z_]\w*)\s*\([^;]*$')


def functions(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = fh.read().split("\n")
    out = []
    name, first = None, None
    for i, line in enumerate(lines):
        if name is None:
            m = START.match(line)
            if m and not line.startswith(("typedef", "struct", "enum", "#", "static const",
                                          "union")) or (m and "(" in line and line.rstrip().endswith(")")):
                name, first = m.group(1), i
                continue
        else:
            if line.startswith("}"):
                out.append((name, first + 1, i + 1 - first))
                name = None
            elif line.endswith(";") and not line.startswith((" ", "\t", "{")):
                name = None
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--file-limit", type=int, default=1000)
    ap.add_argument("--top", type=int, default=0, help="list the N longest whatever the limit")
    ap.add_argument("folders", nargs="*", default=["bench", "pipelines", "decoders", "kernels"])
    args = ap.parse_args()
    found, long_files = [], []
    for top in args.folders:
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for n in names:
                if n.endswith((".c", ".cu")):
                    p = os.path.join(dirpath, n)
                    for name, line, length in functions(p):
                        found.append((length, os.path.relpath(p, ROOT), line, name))
                    with open(p, encoding="utf-8", errors="replace") as fh:
                        lines = fh.read().count("\n")
                    limit = OWN_LIMITS.get(os.path.relpath(p, ROOT), args.file_limit)
                    if lines > limit:
                        long_files.append((lines, os.path.relpath(p, ROOT)))
    found.sort(reverse=True)
    shown = found[:args.top] if args.top else [f for f in found if f[0] > args.limit]
    for length, path, line, name in shown:
        print(f"{length:5d}  {path}:{line}  {name}")
    over = [f for f in found if f[0] > args.limit]
    print(f"{len(over)} functions over {args.limit} lines")
    for lines, path in sorted(long_files, reverse=True):
        print(f"{lines:5d}  {path}  (limit {OWN_LIMITS.get(path, args.file_limit)})")
    own = ", ".join(f"{p} {n}" for p, n in OWN_LIMITS.items())
    print(f"{len(long_files)} files over {args.file_limit} lines (or their own limit: {own})")
    return 1 if over or long_files else 0


if __name__ == "__main__":
    sys.exit(main())
