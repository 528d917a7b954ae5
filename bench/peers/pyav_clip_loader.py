#!/usr/bin/python3
"""A PyAV clip loader: the peer configs/video.yaml is measured against.

Does what a PyTorch video dataset built on PyAV does in __getitem__, with the
same sampling and transforms as configs/video.yaml:
  random clip start (seeded), keyframe seek (container.seek, backward), decode
  forward to the exact frame, clip_frames frames frame_stride apart, resize so
  the shorter side is `shorter_side` (fused with the RGB conversion in
  frame.reformat, as pbench fuses it into sws_scale), random crop, random
  horizontal flip (same for every frame of a clip), normalize to float32
  (x / 255 - mean) / std in CTHW layout, batches of batch_size.
With --clips-per-visit K, each visit of a video draws K random clips, each its
own sample (a batch of 8 holds 2 videos x 4 clips), the way PyAV users do it:
the container is opened once per visit, then a keyframe seek and a forward
decode per clip (pbench's clips_per_visit decodes overlapping clips once).
Workers are processes (multiprocessing), one batch per task, as a DataLoader's
workers. Batches are not sent back to the parent (only a checksum), so the
peer does not pay the inter-process copy a DataLoader pays: favourable to it.

Prints one line: clips/s and clip frames/s over the measured part.
Needs Debian's python3-av and python3-numpy (use /usr/bin/python3)."""
import argparse
import multiprocessing as mp
import os
import random
import resource
import sys
import time

import av
import numpy as np

MEAN = np.array([0.45, 0.45, 0.45], dtype=np.float32).reshape(3, 1, 1, 1)
STD = np.array([0.225, 0.225, 0.225], dtype=np.float32).reshape(3, 1, 1, 1)

ARGS = None


def load_visit(path, rng, clips):
    """clips clips of one video: one open, then a seek and a decode each."""
    a = ARGS
    with av.open(path) as container:
        stream = container.streams.video[0]
        stream.thread_type = "FRAME" if a.threads > 1 else "SLICE"
        stream.codec_context.thread_count = a.threads
        return [load_clip(container, stream, rng) for _ in range(clips)]


def load_clip(container, stream, rng):
    a = ARGS
    fps = stream.average_rate
    tb = stream.time_base
    start_pts = stream.start_time or 0
    count = stream.frames or int(stream.duration * tb * fps)
    span = (a.clip_frames - 1) * a.frame_stride + 1
    start = rng.randrange(0, max(count - span, 0) + 1)
    wanted = [min(start + j * a.frame_stride, count - 1) for j in range(a.clip_frames)]
    target_pts = start_pts + int(round(start / fps / tb))
    container.seek(target_pts, backward=True, any_frame=False, stream=stream)
    w0, h0 = stream.codec_context.width, stream.codec_context.height
    if h0 <= w0:
        out_h, out_w = a.shorter_side, int(round(w0 * a.shorter_side / h0))
    else:
        out_w, out_h = a.shorter_side, int(round(h0 * a.shorter_side / w0))
    frames = {}
    need = set(wanted)
    for frame in container.decode(stream):
        idx = int(round(float((frame.pts - start_pts) * tb * fps)))
        if idx in need:
            frames[idx] = frame.reformat(width=out_w, height=out_h, format="rgb24",
                                         interpolation="BILINEAR").to_ndarray()
            need.discard(idx)
            if not need:
                break
    last = None
    clip = []
    for i in wanted:
        last = frames.get(i, last)
        clip.append(last)
    clip = np.stack(clip)  # T H W C uint8
    # Random crop and flip, the same for every frame of the clip.
    y = rng.randrange(0, out_h - a.crop + 1)
    x = rng.randrange(0, out_w - a.crop + 1)
    clip = clip[:, y:y + a.crop, x:x + a.crop, :]
    if rng.random() < 0.5:
        clip = clip[:, :, ::-1, :]
    # Normalize into C T H W float32.
    clip = clip.transpose(3, 0, 1, 2).astype(np.float32) * (1.0 / 255.0)
    return (clip - MEAN) / STD


def load_batch(batch_index):
    rng = random.Random(ARGS.seed * 1000003 + batch_index)
    paths = ARGS.paths
    k = ARGS.clips_per_visit
    clips = []
    while len(clips) < ARGS.batch_size:
        clips += load_visit(paths[rng.randrange(len(paths))], rng,
                            min(k, ARGS.batch_size - len(clips)))
    batch = np.stack(clips)
    return float(batch[:, 0, 0, 0, 0].sum())


def init_worker(args):
    global ARGS
    ARGS = args


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--clip-frames", type=int, default=16)
    p.add_argument("--frame-stride", type=int, default=2)
    p.add_argument("--shorter-side", type=int, default=128)
    p.add_argument("--crop", type=int, default=112)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--warmup-batches", type=int, default=4)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--clips-per-visit", type=int, default=1,
                   help="clips drawn from each video visited, each a sample (default 1)")
    args = p.parse_args()
    args.paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(args.data) for f in fs
                        if f.endswith((".mp4", ".mkv", ".webm", ".avi", ".mov")))
    if not args.paths:
        sys.exit(f"no videos in {args.data}")
    with mp.get_context("fork").Pool(args.workers, initializer=init_worker,
                                     initargs=(args,)) as pool:
        it = pool.imap(load_batch, range(10 ** 9), chunksize=1)
        for _ in range(args.warmup_batches):
            next(it)
        t0 = time.monotonic()
        batches = 0
        while time.monotonic() - t0 < args.seconds:
            next(it)
            batches += 1
        elapsed = time.monotonic() - t0
        pool.terminate()
        pool.join()
    # The workers' CPU over every batch they made (warm-up, measured and
    # the ones in flight when stopped: at most 2 x workers more than taken).
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = usage.ru_utime + usage.ru_stime
    made = (args.warmup_batches + batches + args.workers) * args.batch_size
    clips = batches * args.batch_size
    print(f"pyav: workers {args.workers}, clips per visit {args.clips_per_visit}, {clips} clips in "
          f"{elapsed:.2f} s, about {made * args.clip_frames / cpu_s:.1f} clip frames per worker "
          f"CPU second: {clips / elapsed:.1f} clips/s, {clips * args.clip_frames / elapsed:.1f} "
          f"clip frames/s")


if __name__ == "__main__":
    main()
