"""The engine and its DataLoader workers end with pbench, however pbench
ends (docs/engines.md): SIGKILLed, crashed or killed by a job runner, it
leaves no process behind. Each process asks the kernel for SIGKILL when its
parent ends (PR_SET_PDEATHSIG): the engine when pbench ends, each worker
when the engine ends. A process blocked in user code (a Dataset that never
returns) notices nothing else."""
import ctypes
import os
import select
import signal

PR_SET_PDEATHSIG = 1


def kill_me_with_parent():
    """SIGKILL for this process when its parent ends; False where the
    kernel or libc offers no prctl."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def end_with_pbench(command_fd=0):
    """In the engine, first thing: it dies with pbench. pbench may have
    ended before the request was made; then the command pipe has no writer
    left (pbench holds its only write end), and the engine exits now."""
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
