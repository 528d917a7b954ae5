"""A synchronous DDP job (gloo on CPU) one of whose ranks has a slow loader,
for checking that `pbench wrap` names the straggler (tests/test_wrap.c):
each rank's Dataset takes --item-ms a sample (sleep, as a slow disk would),
--slow-rank's --slow-ms instead; each step is a DistributedDataParallel
forward and backward, whose all-reduce makes the fast rank wait for the
slow one inside its step. Nothing in it knows pbench. Started the way a
launcher starts ranks (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT):

    /usr/bin/python3 examples/train/launch.py --nproc 2 -- \\
        /usr/bin/python3 tests/wrap_jobs/slow_rank.py --slow-rank 1
"""
import argparse
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    """Samples of random pixels and a label, each item_ms to read."""

    def __init__(self, count, item_ms):
        self.count = count
        self.item_s = item_ms / 1e3

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        time.sleep(self.item_s)
        g = torch.Generator()
        g.manual_seed(index)
        return torch.rand(3, 8, 8, generator=g), index % 10


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--item-ms", type=float, default=1.0)
    p.add_argument("--slow-rank", type=int, default=1)
    p.add_argument("--slow-ms", type=float, default=6.0)
    p.add_argument("--step-ms", type=float, default=10.0)
    args = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    item_ms = args.slow_ms if rank == args.slow_rank else args.item_ms
    loader = DataLoader(Slow(args.steps * args.batch_size, item_ms), batch_size=args.batch_size,
                        num_workers=args.workers,
                        multiprocessing_context="fork" if args.workers else None)
    model = nn.parallel.DistributedDataParallel(nn.Linear(3 * 8 * 8, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    steps = 0
    for images, labels in loader:
        loss = nn.functional.cross_entropy(model(images.flatten(1)), labels)
        optimizer.zero_grad()
        loss.backward()  # the all-reduce: the fast rank waits here for the slow one
        optimizer.step()
        time.sleep(args.step_ms / 1e3)
        steps += 1
    print("rank %d: %d steps" % (rank, steps), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
