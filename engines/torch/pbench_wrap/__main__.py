"""Entry point: python3 -m pbench_wrap, started by pbench wrap (the wrap
engine). Reads commands on stdin, writes frames to fd 3, and the job's
output to fd 5 (pbench's stderr). Exits 0 after close, 2 after a config
error."""
import sys

from .relay import main

if __name__ == "__main__":
    sys.exit(main())
