"""Starts one rank of a training command in each of N network namespaces, as
`srun -N N` starts ranks on N machines with the environment passed on
(tests/test_wrap_nodes.c, docs/wrap.md "Across machines"): rank K runs in
namespace NS_K, under `unshare --uts --mount` with hostname nodeK+1 and a
private /tmp and /run, with RANK=K, WORLD_SIZE=N, LOCAL_RANK=0,
LOCAL_WORLD_SIZE=1, MASTER_ADDR (the first node's address), MASTER_PORT and
GLOO_SOCKET_IFNAME=eth0 (the node's interface) added to this process's
environment, which pbench's hook finds there too.

    nodes_launch.py --master 10.77.0.11 --netns pbn1 --netns pbn2 -- \\
        /usr/bin/python3 examples/train/train.py --ddp

With --first-rank K --world N it starts ranks K, K+1, ... of N: one
launcher per node, as torchrun per node is (pbench wrap --join).

SIGINT and SIGTERM are passed on to the ranks. Exits with the first
non-zero status of a rank, else 0."""
import argparse
import os
import signal
import subprocess
import sys

# Each node's private /tmp and /run. pbench's tree, where it lies under
# either (a CI clone in /tmp), is held on /mnt (in the node's own mount
# namespace) while they are covered, then moved back to its path, so the
# job's files and the hook are found but nothing else of the head's /tmp
# (its relay's socket) is.
NODE = ('hostname "$PBENCH_TEST_NODE" && '
        'case "$PBENCH_TEST_TREE" in /tmp/*|/run/*) mount --bind "$PBENCH_TEST_TREE" /mnt;; '
        '*) false;; esac; held=$?; '
        'mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /run && '
        '{ [ $held != 0 ] || { mkdir -p "$PBENCH_TEST_TREE" && '
        'mount --move /mnt "$PBENCH_TEST_TREE"; }; } && exec "$@"')
TREE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--netns", action="append", required=True)
    p.add_argument("--master", required=True, help="the first node's address")
    p.add_argument("--port", default="29517")
    p.add_argument("--first-rank", type=int, default=0,
                   help="the rank of the first node named (one launcher per node: --join)")
    p.add_argument("--world", type=int, default=0, help="all ranks (default: the nodes named)")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("name the command after --")
    ranks = []
    for rank, netns in enumerate(args.netns, args.first_rank):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK="0",
                   WORLD_SIZE=str(args.world or len(args.netns)),
                   LOCAL_WORLD_SIZE="1", MASTER_ADDR=args.master, MASTER_PORT=args.port,
                   GLOO_SOCKET_IFNAME="eth0", PBENCH_TEST_NODE="node%d" % (rank + 1),
                   PBENCH_TEST_TREE=TREE)
        ranks.append(subprocess.Popen(["ip", "netns", "exec", netns, "unshare", "--uts",
                                       "--mount", "sh", "-c", NODE, "sh"] + command, env=env))

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
