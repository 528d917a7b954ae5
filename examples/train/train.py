"""A small, real CPU training job of the kind pbench wrap measures
(docs/wrap.md): a folder of JPEG photographs-to-be with labels, PIL decode,
torchvision's RandomResizedCrop, flip, ColorJitter, ToTensor and Normalize
in a Compose, a DataLoader with worker processes, and a small CNN trained
with SGD. Nothing in it knows pbench.

    pbench wrap -- /usr/bin/python3 examples/train/train.py
    /usr/bin/python3 examples/train/train.py --hand-timing   # its own stall

It makes its data on first use (--data, default ~/.cache/pbench/train-example):
--images JPEGs of smooth random colour fields with shapes, --size pixels.

Options for checking pbench against the job itself:
  --hand-timing        time each next() by hand and print the stall and the
                       steps/s at the end, as users do without pbench
  --checksum FILE      write a SHA-256 of every batch the loop receives
  --delay-ms MS        sleep this long in each __getitem__ (a slow loader)
  --synthetic          train on batches made once in memory (no loader):
                       the steps/s a loader that never waits would give
  --start-method M     fork, spawn or forkserver for the workers
  --ddp                DistributedDataParallel (gloo) over the ranks a
                       launcher started (RANK, WORLD_SIZE, MASTER_ADDR...)
"""
import argparse
import hashlib
import itertools
import os
import random
import sys
import time

import torch
import torch.nn as nn
from PIL import Image, ImageDraw
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms


def make_images(folder, count, size, seed=7):
    """count JPEGs in folder (skipped when it already holds them)."""
    os.makedirs(folder, exist_ok=True)
    done = os.path.join(folder, ".complete-%d-%d" % (count, size))
    if os.path.exists(done):
        return
    rng = random.Random(seed)
    for i in range(count):
        image = Image.new("RGB", (size, size), tuple(rng.randrange(256) for _ in range(3)))
        draw = ImageDraw.Draw(image)
        for _ in range(6):
            x, y = rng.randrange(size), rng.randrange(size)
            r = rng.randrange(size // 8, size // 3)
            draw.ellipse((x - r, y - r, x + r, y + r),
                         fill=tuple(rng.randrange(256) for _ in range(3)))
        image.save(os.path.join(folder, "%05d_%d.jpg" % (i, i % 10)), quality=90)
    open(done, "w").close()


class Photos(Dataset):
    """Files with labels in their names, PIL decode, a Compose of transforms."""

    def __init__(self, folder, crop, delay_ms=0.0):
        self.files = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                            if f.endswith(".jpg"))
        self.delay_s = delay_ms / 1000.0
        self.transform = transforms.Compose([
            transforms.RandomResizedCrop(crop, scale=(0.5, 1.0)),
            transforms.RandomHorizontalFlip(),
            transforms.ColorJitter(0.2, 0.2, 0.2),
            transforms.ToTensor(),
            transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
        ])

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        path = self.files[index]
        with Image.open(path) as f:
            image = f.convert("RGB")
        if self.delay_s:
            time.sleep(self.delay_s)
        label = int(os.path.basename(path).split("_")[1].split(".")[0])
        return self.transform(image), label


def model_for(crop):
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def seed_worker(worker_id):
    seed = torch.initial_seed() % 2 ** 32
    random.seed(seed)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=os.path.join(os.path.expanduser("~"), ".cache", "pbench",
                                                  "train-example"))
    p.add_argument("--images", type=int, default=512)
    p.add_argument("--size", type=int, default=160)
    p.add_argument("--crop", type=int, default=96)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start-method", default=None)
    p.add_argument("--delay-ms", type=float, default=0.0)
    p.add_argument("--hand-timing", action="store_true")
    p.add_argument("--checksum", default=None)
    p.add_argument("--synthetic", action="store_true")
    p.add_argument("--max-steps", type=int, default=0)
    p.add_argument("--ddp", action="store_true")
    args = p.parse_args()

    torch.manual_seed(args.seed)
    random.seed(args.seed)
    torch.set_num_threads(1)
    rank, world = 0, 1
    if args.ddp:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        make_images(args.data, args.images, args.size)
    if args.ddp:
        dist.barrier()
    dataset = Photos(args.data, args.crop, args.delay_ms)
    sampler = None
    if args.ddp:
        sampler = torch.utils.data.distributed.DistributedSampler(dataset, world, rank,
                                                                  seed=args.seed)
    generator = torch.Generator()
    generator.manual_seed(args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=sampler is None,
                        sampler=sampler, num_workers=args.workers, worker_init_fn=seed_worker,
                        generator=generator, drop_last=True,
                        multiprocessing_context=args.start_method if args.workers else None)
    model = model_for(args.crop)
    if args.ddp:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    sums = open(args.checksum, "w") if args.checksum else None

    synthetic = None
    if args.synthetic:  # batches made once, handed out again: a loader that never waits
        it = iter(loader)
        synthetic = [next(it) for _ in range(8)]
        del it

    steps, wait_ns, start_ns = 0, 0, 0
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        batches = iter(loader) if synthetic is None else itertools.cycle(synthetic)
        while True:
            t0 = time.monotonic_ns()
            try:
                images, labels = next(batches)
            except StopIteration:
                break
            t1 = time.monotonic_ns()
            if start_ns == 0:  # the first batch (the workers' start) is not timed
                start_ns = t1
            else:
                wait_ns += t1 - t0
            if sums is not None:
                digest = hashlib.sha256(images.numpy().tobytes() + labels.numpy().tobytes())
                sums.write("%d %d %s\n" % (epoch, steps, digest.hexdigest()))
            optimizer.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
            steps += 1
            if args.max_steps and steps >= args.max_steps:
                break
            if synthetic is not None and steps >= (epoch + 1) * (len(dataset) // args.batch_size):
                break
        if args.max_steps and steps >= args.max_steps:
            break
    span_s = (time.monotonic_ns() - start_ns) / 1e9
    if sums is not None:
        sums.close()
    if args.hand_timing and rank == 0:
        print("hand timing: %d steps in %.2f s: %.2f steps/s, stall %.1f%% (next() wait, "
              "first batch excluded)" % (steps, span_s, steps / span_s,
                                         100.0 * wait_ns / (span_s * 1e9)), flush=True)
    print("rank %d: trained %d steps, last loss %.3f" % (rank, steps, loss.item()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
