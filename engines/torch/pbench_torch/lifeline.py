"""The engine and its DataLoader workers end with pbench, however pbench
ends (docs/engines.md): SIGKILLed, crashed or killed by a job runner, it
leaves no process behind. Each process asks the kernel for SIGKILL when its
parent ends (PR_SET_PDEATHSIG): the engine when pbench ends, each worker
when the engine ends. A process blocked in user code (a Dataset that never
returns) notices nothing else.

Before pbench kills an engine that is stuck, it sends SIGUSR1 to its group:
each process loading a sample then says on stderr which sample and where in
the code it is (say_where_stuck)."""
import ctypes
import os
import select
import signal
import site
import sys
import sysconfig

PR_SET_PDEATHSIG = 1


def kill_me_with_parent():
    """SIGKILL for this process when its parent ends; False where the
    kernel or libc offers no prctl."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _library_dirs():
    dirs = [sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib",
                                                      "platlib")]
    try:
        dirs += site.getsitepackages()
    except AttributeError:
        pass
    return tuple(d.rstrip("/") + "/" for d in dirs if d) + ("/usr/lib/python3/",)


def where_stuck(frame):
    """"sample INDEX (FILE) in PLACE" for the sample being loaded in frame's
    stack (the innermost place outside Python's and torch's libraries), or
    None when no sample is being loaded."""
    libraries = _library_dirs()
    place = sample = None
    while frame is not None:
        code = frame.f_code
        if place is None and not code.co_filename.startswith(libraries):
            place = "%s:%d in %s" % (code.co_filename, frame.f_lineno, code.co_name)
        if (code.co_name == "__getitem__" and
                code.co_filename.endswith(os.path.join("pbench_torch", "dataset.py"))):
            sample = frame
            break
        frame = frame.f_back
    if sample is None:
        return None
    index = sample.f_locals.get("index")
    path = getattr(sample.f_locals.get("entry"), "path", None)
    if path is None:
        try:
            path = sample.f_globals["userdata"].sample_file(sample.f_locals["self"].dataset,
                                                            index)
        except Exception:
            path = None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    return "sample %s%s in %s" % (index, " (%s)" % path if path else "", place)


def say_where_stuck(signum, frame):
    """SIGUSR1's handler: the sample this process is loading, and where."""
    where = where_stuck(frame)
    if where is not None:
        sys.stderr.write("pbench_torch: process %d is stuck on %s\n"
                         % (os.getpid(), where.encode("ascii", "backslashreplace").decode()))
        sys.stderr.flush()


def end_with_pbench(command_fd=0):
    """In the engine, first thing: it dies with pbench. pbench may have
    ended before the request was made; then the command pipe has no writer
    left (pbench holds its only write end), and the engine exits now."""
    signal.signal(signal.SIGUSR1, say_where_stuck)  # its workers inherit it
    kill_me_with_parent()
    try:
        poller = select.poll()
        poller.register(command_fd, 0)  # hang-up and errors only
        for _, events in poller.poll(0):
            if events & (select.POLLHUP | select.POLLERR):
                os._exit(1)
    except (OSError, ValueError):
        pass


class EndWithEngine:
    """The DataLoader's worker_init_fn: the worker dies with the engine's
    main process (engine_pid), which forked it."""

    def __init__(self, engine_pid):
        self.engine_pid = engine_pid

    def __call__(self, worker_id):
        kill_me_with_parent()
        if os.getppid() != self.engine_pid:  # the engine ended before the request
            os._exit(1)
