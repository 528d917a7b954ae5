#!/usr/bin/env python3
"""Lists pbench's source files that do not open with a comment saying what
they are for, as every SQLite file does: C and CUDA files (a /* or //
comment before any code), Python (a module docstring or a # comment after
the #! line) and shell scripts (a # comment after the #! line), a script
without an extension taken by its #! line. Exits 1
when any file lacks one, so CI can gate on it.

    scripts/purpose-comments.py [folders...]
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ["bench", "pipelines", "decoders", "kernels", "engines", "examples", "tests", "scripts",
           ".ci"]
C_LIKE = (".c", ".h", ".cu", ".cuh")


def tracked(folders):
    """The files git tracks in folders (generated and ignored files are not ours)."""
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "--", *folders], capture_output=True,
                         text=True, check=True).stdout
    return [p for p in out.splitlines() if p]


def first_lines(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as fh:
        lines = [line.rstrip("\n") for line in fh.readlines()[:40]]
    if lines and lines[0].startswith("#!"):
        lines = lines[1:]
    return [line for line in lines if line.strip()]


def shebang(path):
    """The #! line of a file without an extension (scripts/recipe-check), or ""."""
    if "." in os.path.basename(path):
        return ""
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as fh:
        line = fh.readline()
    return line if line.startswith("#!") else ""


def has_purpose(path):
    """Whether the file opens with its purpose comment; None when the rule
    does not apply to its kind of file."""
    lines = first_lines(path)
    if "python" in shebang(path):
        path += ".py"
    elif shebang(path):
        path += ".sh"
    if path.endswith(C_LIKE):
        return bool(lines) and lines[0].lstrip().startswith(("/*", "//"))
    if path.endswith(".py"):
        if not lines:
            return os.path.basename(path) == "__init__.py"  # an empty package marker
        head = lines[0].lstrip()
        return head.startswith(('"""', "'''", "#", 'r"""'))
    if path.endswith(".sh") or (path.startswith(".ci/") and "." not in os.path.basename(path)):
        return bool(lines) and lines[0].startswith("#")
    return None


def main():
    folders = sys.argv[1:] or FOLDERS
    missing = []
    checked = 0
    for path in tracked(folders):
        if "/node_modules/" in path:
            continue
        ok = has_purpose(path)
        if ok is None:
            continue
        checked += 1
        if not ok:
            missing.append(path)
    for path in missing:
        print(f"{path}: no comment at its top saying what the file is for")
    print(f"purpose comments: {checked - len(missing)} of {checked} files open with one")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
