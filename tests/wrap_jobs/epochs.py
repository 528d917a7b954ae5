"""A training job that is not pbench's example, for checking `pbench wrap`'s
figures against the job's own clock (tests/test_wrap_figures.c): several
epochs of a map-style Dataset, DataLoader worker processes started again
each epoch (no persistent workers), and its own time.perf_counter() around
every next(), as a user times a loop by hand. Nothing in it knows pbench.

Each sample costs --item-ms of CPU work and sleep (half each) in the
worker; each step --step-ms of CPU in the main process (matrix products).
At the end it prints one line, "hand timing: {json}", with what its own
clock saw over the batches after --warmup:
  wait_s      the next() calls that returned a batch
  stop_s      the next() calls that raised StopIteration (the workers' shutdown)
  iter_s      the iter(loader) calls inside the window (the workers' start)
  step_s      the rest of span_s: from each batch's return to the loop's
              next call on the loader, and the work after the last batch
  span_s      from the first measured batch's next() to the end of the loop
  last_s      from the last batch's next() to the end of the loop
  stall_pct   100 wait_s / span_s
  steps_per_s batches / span_s
and, with --timeline FILE, every call's start and end on the monotonic clock.

    /usr/bin/python3 tests/wrap_jobs/epochs.py --epochs 5 --batches 12 --workers 2
"""
import argparse
import json
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

clock = time.perf_counter_ns  # CLOCK_MONOTONIC on Linux, as pbench's clock


def burn_ns(ns, size=48):
    """Matrix products for about ns of this thread's CPU."""
    a = torch.rand(size, size)
    end = time.thread_time_ns() + ns
    while time.thread_time_ns() < end:
        a = torch.tanh(a @ a)
    return a


class Noise(Dataset):
    """Samples of random pixels and a label, each --item-ms to make."""

    def __init__(self, count, item_ms):
        self.count = count
        self.item_ns = int(item_ms * 1e6)

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        g = torch.Generator()
        g.manual_seed(index)
        burn_ns(self.item_ns // 2, 16)
        time.sleep(self.item_ns / 2e9)
        return torch.rand(3, 24, 24, generator=g), index % 10


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batches", type=int, default=12, help="batches an epoch")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--start-method", default="fork")
    p.add_argument("--persistent", action="store_true")
    p.add_argument("--item-ms", type=float, default=6.0)
    p.add_argument("--step-ms", type=float, default=30.0)
    p.add_argument("--warmup", type=int, default=5, help="batches before the measured ones")
    p.add_argument("--counted", action="store_true",
                   help="take len(loader) batches an epoch (never reach StopIteration)")
    p.add_argument("--tail-s", type=float, default=0.0,
                   help="work this long after the loop (saving a checkpoint)")
    p.add_argument("--synthetic", type=int, default=0, metavar="K",
                   help="train on K batches taken once from the loader and handed out "
                        "again, in turn (a loader that never waits)")
    p.add_argument("--timeline", default=None)
    args = p.parse_args()
    torch.set_num_threads(1)
    loader = DataLoader(Noise(args.batches * args.batch_size, args.item_ms),
                        batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                        persistent_workers=args.persistent and args.workers > 0,
                        multiprocessing_context=args.start_method if args.workers else None)
    weights = torch.rand(48, 48)
    events = []  # (what, batch number, start, end)
    taken = 0
    kept = None
    if args.synthetic:
        it = iter(loader)
        kept = [next(it) for _ in range(args.synthetic)]
        del it
    for epoch in range(args.epochs):
        t0 = clock()
        it = iter(loader) if kept is None else iter(kept[n % len(kept)]
                                                     for n in range(len(loader)))
        events.append(("iter", taken, t0, clock()))
        for _ in range(len(loader)) if args.counted else iter(int, 1):
            t0 = clock()
            try:
                images, labels = next(it)
            except StopIteration:
                events.append(("stop", taken, t0, clock()))
                break
            events.append(("next", taken, t0, clock()))
            taken += 1
            weights = weights + 1e-6 * burn_ns(int(args.step_ms * 1e6)).sum() + images.mean()
    end = clock()
    if args.tail_s:
        burn_ns(int(args.tail_s * 1e9))
    measured = [e for e in events if e[1] >= args.warmup]
    first = next(e for e in measured if e[0] == "next")
    inside = [e for e in measured if e[2] >= first[2]]
    sums = {k: sum(e[3] - e[2] for e in inside if e[0] == k) / 1e9 for k in ("next", "stop", "iter")}
    span = (end - first[2]) / 1e9
    last = [e for e in inside if e[0] == "next"][-1]
    hand = {"batches": sum(1 for e in inside if e[0] == "next"), "wait_s": sums["next"],
            "stop_s": sums["stop"], "iter_s": sums["iter"],
            "step_s": span - sum(sums.values()), "span_s": span,
            "last_s": (end - last[2]) / 1e9, "stall_pct": 100.0 * sums["next"] / span,
            "steps_per_s": sum(1 for e in inside if e[0] == "next") / span}
    if args.timeline:
        with open(args.timeline, "w") as f:
            json.dump(events, f)
    print("hand timing: " + json.dumps(hand), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
