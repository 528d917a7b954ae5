"""The wrapped job's processes as /proc shows them (docs/wrap.md): what runs
below the relay, what the job left behind (the relay is their subreaper),
and why a Python of the job cannot load pbench's hook (a flag, a cleared or
reset environment), for the relay's messages."""
import collections
import os
import re

PYTHON_NAME = re.compile(r"python[0-9.]*(-dbg)?$")
# Interpreter flags that keep pbench's sitecustomize from running, and why.
NO_HOOK_FLAGS = {"S": "skips the site module, which runs pbench's hook (sitecustomize)",
                 "I": "isolated mode ignores PYTHONPATH, where pbench's hook is",
                 "E": "ignores PYTHON* variables, PYTHONPATH with pbench's hook among them"}


def python_flags(argv):
    """The interpreter flags of a Python command line (before its script,
    -c or -m), each a letter; None when argv is not a Python's."""
    if not argv or not PYTHON_NAME.match(os.path.basename(argv[0])):
        return None
    flags, i = [], 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] not in ("-", "--"):
        arg = argv[i]
        if arg.startswith("--"):  # --help and the like
            i += 1
            continue
        for k, letter in enumerate(arg[1:]):
            if letter in "cm":
                return flags
            if letter in "WX":  # an argument follows, attached or next
                i += arg[k + 2:] == ""
                break
            flags.append(letter)
        i += 1
    return flags


def hookless_reason(argv, env, startup):
    """Why a Python started with argv and env cannot load pbench's hook
    (a flag, a cleared or reset environment); None when it can, or when
    argv is not a Python's. env is None where it is unknown."""
    flags = python_flags(argv)
    if flags is None:
        return None
    for letter in flags:
        if letter in NO_HOOK_FLAGS:
            return "python -%s %s" % (letter, NO_HOOK_FLAGS[letter])
    if env is None:
        return None
    if not env.get("PBENCH_WRAP_SOCKET"):
        return "its environment has no PBENCH_WRAP_SOCKET: a launcher cleared it (env -i?)"
    if startup not in (env.get("PYTHONPATH") or "").split(":"):
        return ("its PYTHONPATH is %r, without pbench's %s: a launcher reset PYTHONPATH"
                % (env.get("PYTHONPATH") or "", startup))
    return None


def command_reason(argv, startup):
    """hookless_reason for the command pbench runs, through an `env` in
    front of it (env -i, env -u PYTHONPATH, env PYTHONPATH=...)."""
    env = {"PBENCH_WRAP_SOCKET": "set", "PYTHONPATH": startup}
    i = 0
    if argv and os.path.basename(argv[0]) == "env":
        i = 1
        while i < len(argv):
            arg = argv[i]
            if arg in ("-i", "--ignore-environment", "-"):
                env = {}
            elif arg in ("-u", "--unset") and i + 1 < len(argv):
                i += 1
                env.pop(argv[i], None)
            elif "=" in arg and not arg.startswith("-"):
                name, _, value = arg.partition("=")
                env[name] = value
            elif not arg.startswith("-"):
                break
            i += 1
    reason = hookless_reason(argv[i:], env, startup)
    return "%s: %s" % (" ".join(argv[:i + 1]), reason) if reason else None


def process_reason(pid, startup):
    """hookless_reason for a running process, from /proc."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = [os.fsdecode(a) for a in f.read().split(b"\0")[:-1]]
        with open("/proc/%d/environ" % pid, "rb") as f:
            env = dict(e.partition(b"=")[::2] for e in f.read().split(b"\0") if e)
        env = {os.fsdecode(k): os.fsdecode(v) for k, v in env.items()}
    except OSError:
        return None
    reason = hookless_reason(argv, env, startup)
    return "%s (pid %d): %s" % (argv[0], pid, reason) if reason else None


def descendants(pid, live=False):
    """The processes below pid, from /proc; live: less those that have
    exited and wait to be reaped (zombies)."""
    children = collections.defaultdict(list)
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
            fields = stat[stat.rindex(b")") + 2:].split()
            ppid = int(fields[1])
        except (OSError, ValueError, IndexError):
            continue
        children[ppid].append((int(name), fields[0] == b"Z"))
    found, todo = [], [pid]
    while todo:
        for child, zombie in children.get(todo.pop(), []):
            if not (live and zombie):
                found.append(child)
            todo.append(child)
    return found


def become_subreaper():
    """What the job leaves behind (a helper in its session, a double-forked
    daemon) becomes the relay's child rather than init's
    (PR_SET_CHILD_SUBREAPER), so that the relay sees it and ends it."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def children():
    """The relay's own children (/proc's children lists of its threads), or
    None where the kernel keeps none."""
    found = []
    try:
        for task in os.listdir("/proc/self/task"):
            with open("/proc/self/task/%s/children" % task) as f:
                found += [int(pid) for pid in f.read().split()]
    except (OSError, ValueError):
        return None
    return found


def reap_orphans(job_pid):
    """Waits for the relay's children that have exited (what the job left,
    reparented here), other than the job (subprocess waits for that one):
    no zombie piles up while a long job runs."""
    mine = children()
    for pid in mine if mine is not None else descendants(os.getpid()):
        if pid != job_pid:
            try:
                os.waitpid(pid, os.WNOHANG)
            except OSError:  # not the relay's child (a grandchild)
                pass


def command_of(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            words = [os.fsdecode(a) for a in f.read().split(b"\0")[:-1]]
        return " ".join(words)[:80] or "?"
    except OSError:
        return "?"
