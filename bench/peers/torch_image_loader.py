#!/usr/bin/python3
"""The PyTorch peer of configs/image.yaml: a torch DataLoader doing the same
work on the same files, so pbench's samples/s can be compared with what a
training script gets from PyTorch.

Per sample: read the file and decode it with PIL (libjpeg-turbo underneath),
convert to RGB, RandomResizedCrop(224), RandomHorizontalFlip(),
ToTensor() and Normalize(ImageNet mean/std); batches of 64 collated by the
DataLoader's workers. Like pbench's run it warms up for a few batches, then
measures for --time seconds, in --repeats separate rounds, and prints the
median samples/s (and every repeat) as one JSON line on stdout.

Needs Debian's python3-torch python3-torchvision python3-pil
(scripts/bench-image.sh installs them):

    /usr/bin/python3 bench/peers/torch_image_loader.py --data data/image \
        --workers 2 --batch-size 64 --time 5 --repeats 3
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms


class ImageFiles(Dataset):
    """Every file under a folder, sorted, decoded as torchvision's
    default_loader (pil_loader) does."""

    def __init__(self, root, transform):
        self.paths = sorted(
            os.path.join(d, f)
            for d, _, files in os.walk(root)
            for f in files
            if not f.startswith("."))
        self.transform = transform

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        with open(self.paths[index], "rb") as f:
            image = Image.open(f).convert("RGB")
        return self.transform(image)


def cpu_seconds(pids):
    """User + system CPU time of the processes, from /proc (Linux)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except OSError:
            pass
    return total / os.sysconf("SC_CLK_TCK")


def batches_forever(loader):
    while True:
        for batch in loader:
            yield batch


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder of images")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--prefetch-factor", type=int, default=2)
    parser.add_argument("--warmup-batches", type=int, default=4)
    parser.add_argument("--time", type=float, default=5.0, help="measured seconds per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--step-ms", type=float, default=0,
                        help="a simulated training step after each batch (time.sleep), as "
                             "pbench's run.step_ms; the share of time spent waiting for "
                             "batches is printed as stall_pct")
    args = parser.parse_args()

    torch.manual_seed(0)
    transform = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    dataset = ImageFiles(args.data, transform)
    if len(dataset) == 0:
        sys.exit(f"no files under {args.data}")
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers, persistent_workers=args.workers > 0,
                        prefetch_factor=args.prefetch_factor if args.workers > 0 else None)
    batches = batches_forever(loader)
    rates, cpu_pcts, stalls = [], [], []
    for repeat in range(args.repeats):
        for _ in range(args.warmup_batches):
            next(batches)
        # The training process and its loader workers: CPU over the measured
        # part, 100 = one core, to tell a busy machine from a slow loader.
        pids = [os.getpid()] + [w.pid for w in getattr(loader._iterator, "_workers", [])]
        samples, waited = 0, 0.0
        cpu_start, start = cpu_seconds(pids), time.perf_counter()
        while time.perf_counter() - start < args.time:
            t0 = time.perf_counter()
            samples += next(batches).shape[0]
            waited += time.perf_counter() - t0
            if args.step_ms > 0:
                time.sleep(args.step_ms / 1000)
        wall = time.perf_counter() - start
        rates.append(samples / wall)
        stalls.append(100 * waited / wall)
        cpu_pcts.append(100 * (cpu_seconds(pids) - cpu_start) / wall)
        print(f"  torch repeat {repeat + 1}/{args.repeats}: {rates[-1]:.1f} samples/s, "
              f"CPU {cpu_pcts[-1]:.0f} %", file=sys.stderr)
    print(json.dumps({"samples_per_s": statistics.median(rates), "repeats": rates,
                      "stall_pct": statistics.median(stalls), "step_ms": args.step_ms,
                      "cpu_pct": statistics.median(cpu_pcts),
                      "workers": args.workers, "batch_size": args.batch_size,
                      "files": len(dataset), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
