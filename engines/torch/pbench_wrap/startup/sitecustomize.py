"""pbench wrap's start-up file (docs/wrap.md): pbench puts this folder first
on the job's PYTHONPATH, so every Python process of the job runs it at
start-up. It loads pbench's hook (pbench_wrap.hook) and then the
sitecustomize it shadows, if any (the user's own, or the system's), so that
one still runs as it would without pbench."""
import importlib.machinery
import importlib.util
import os
import sys


def _pbench_wrap_start():
    if not os.environ.get("PBENCH_WRAP_SOCKET"):
        return
    engines = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if engines not in sys.path:
        sys.path.append(engines)  # after the job's own folders: nothing of theirs is shadowed
    try:
        from pbench_wrap import hook
        hook.install()
    except Exception as e:  # the hook never stops the job
        sys.stderr.write("pbench wrap: measuring is off in process %d: %s: %s\n"
                         % (os.getpid(), type(e).__name__, e))


def _shadowed_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["_pbench_wrap_shadowed_sitecustomize"] = module
    spec.loader.exec_module(module)


_pbench_wrap_start()
_shadowed_sitecustomize()
