"""Starts N ranks of a training command as torchrun starts them: each with
RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT
set, then waits for them all. Debian 12's torchrun (torch 1.13 on Python
3.11) fails before it starts a rank; this does what it would for one
machine (docs/wrap.md):

    /usr/bin/python3 examples/train/launch.py --nproc 2 -- \\
        /usr/bin/python3 examples/train/train.py --ddp
    pbench wrap -- /usr/bin/python3 examples/train/launch.py --nproc 2 -- \\
        /usr/bin/python3 examples/train/train.py --ddp

SIGINT and SIGTERM are passed on to the ranks. Exits with the first
non-zero status of a rank, else 0."""
import argparse
import os
import signal
import socket
import subprocess
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("name the command after --")
    port = str(free_port())
    ranks = []
    for rank in range(args.nproc):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank),
                   WORLD_SIZE=str(args.nproc), LOCAL_WORLD_SIZE=str(args.nproc),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        ranks.append(subprocess.Popen(command, env=env))

    def forward(signum, frame):
        for r in ranks:
            if r.poll() is None:
                r.send_signal(signum)
    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
    codes = [r.wait() for r in ranks]
    return next((c for c in codes if c != 0), 0)


if __name__ == "__main__":
    sys.exit(main())
