"""Entry point: python3 -m pbench_torch, started by pbench for one point.

Reads commands on stdin (fd 0), writes frames to fd 3. Exits 0 after close
(or the end of stdin), 2 after a config or environment error, 1 after
another fatal error."""
import os
import sys

from .lifeline import end_with_pbench
from .protocol import CommandReader, FrameWriter

RECORDS_FD = 3
PACKAGES = "python3-torch python3-torchvision python3-av"


def missing_package():
    """The name of the first module the engine needs that will not import,
    or None."""
    for name in ("torch", "torchvision", "PIL", "numpy"):
        try:
            __import__(name)
        except ImportError:
            return name
    return None


def main():
    end_with_pbench()
    try:
        os.fstat(RECORDS_FD)
    except OSError:
        sys.stderr.write("pbench_torch: fd 3 is not open; pbench starts this engine "
                         "(docs/engines.md)\n")
        return 2
    writer = FrameWriter(RECORDS_FD)
    missing = missing_package()
    if missing is not None:
        writer.json({"type": "fatal", "kind": "environment",
                     "message": "%s cannot import %s: install Debian's %s (or name an "
                                "interpreter that has them with loader.python)"
                                % (sys.executable, missing, PACKAGES)})
        return 2
    from .loop import Engine
    return Engine(writer, CommandReader(0)).serve()


if __name__ == "__main__":
    sys.exit(main())
