"""Video clips through PyAV, as a training script's video Dataset decodes
them, with pbench's decode options and counters.

Per sample: av.open (or the file kept open from the worker's last clip with
reopen: reuse), container.seek to the keyframe before the clip (backward,
any_frame False), then container.demux + packet.decode forward to the exact
frames: clip_frames frames frame_stride apart, each converted by
frame.reformat(width, height, "rgb24", BILINEAR) (the shorter-side resize
fused into the conversion, as pbench's sws_scale) then to_ndarray. The clip
is a uint8 T x C x H x W tensor (the T x H x W x C stack, permuted) so
torchvision's tensor transforms run on all its frames at once.

Clip starts follow pbench's pb_video_clip_indices: random: any start, drawn
from Python's random (seeded per worker by the DataLoader); uniform: one of
clips_per_video evenly spread starts, drawn the same way; sequential: the
next position each time the worker gets the same file again while it is
open, else the first. A video shorter than a clip pads, loops or skips.

Sub-stages (columns decode.open, decode.seek, decode.demux, decode.decode,
decode.convert): open is av.open and the stream setup; seek is
container.seek (and the retries further back when the demuxer lands after
the clip's first frame); demux is the time inside the demux iterator's
next(); decode is packet.decode(); convert is reformat + to_ndarray and the
delivery of each wanted frame. Counters, as pbench's decoder counts them:
frames_decoded (frames out of the decoder), frames_delivered (clip slots
filled, a repeated frame counted per slot), seeks (container.seek calls),
opens (av.open calls).

Differences from pbench's decoder: pbench goes on decoding from the last
clip's position without seeking when no keyframe lies between; this
decoder seeks for every clip (as the common Dataset code does). discard:
nonref, clips_per_visit above 1 and rotation metadata are not supported
(the first two are config errors, rotation is ignored: PyAV 10 does not
expose the display matrix)."""
import os
import random

import numpy as np

from .errors import ConfigError, SampleError, sent

SUBSTAGES = ("open", "seek", "demux", "decode", "convert")
COUNTERS = ("frames_decoded", "frames_delivered", "seeks", "opens")
OPEN, SEEK, DEMUX, DECODE, CONVERT = range(5)
DECODED, DELIVERED, SEEKS, OPENS = range(4)
MAX_SEEK_RETRIES = 5

# The decoder's options the clips read: pbench sends every one of them
# (its video decoder's table, defaults filled in), so none is kept here.
OPTIONS = ("clip_frames", "frame_stride", "clips_per_video", "sampling", "seek", "threads",
           "thread_type", "short_video", "reopen", "discard", "size", "shorter_side",
           "rotation", "corrupt_frames", "clips_per_visit")


def check_options(options, where):
    """The decode stage's video options, as pbench sent them; raises
    ConfigError(where.key, ...) for one it did not send or what PyAV cannot
    do here."""
    # discard and clips_per_visit: stages.refuse_unrunnable, before
    # (engines/engine_rules.json).
    opts = {key: sent(options, key, where) for key in OPTIONS}
    for key, allowed in (("sampling", ("random", "uniform", "sequential")),
                         ("seek", ("keyframe", "none")), ("thread_type", ("frame", "slice")),
                         ("short_video", ("pad", "loop", "skip")),
                         ("reopen", ("reuse", "per_clip")),
                         ("corrupt_frames", ("error", "conceal"))):
        if opts[key] not in allowed:
            raise ConfigError("%s.%s" % (where, key), "%r is not one of %s"
                              % (opts[key], ", ".join(allowed)))
    return opts


def clip_indices(frame_count, opts, clip):
    """The clip's frame numbers, as pb_video_clip_indices picks them; clip
    is the position number for uniform and sequential sampling. Raises
    SampleError for a short video with short_video: skip."""
    clip_frames, stride = int(opts["clip_frames"]), int(opts["frame_stride"])
    span = (clip_frames - 1) * stride + 1
    if span > frame_count:
        if opts["short_video"] == "skip":
            raise SampleError("video of %d frames is shorter than a clip of %d frames at stride "
                              "%d (short_video: skip)" % (frame_count, clip_frames, stride))
        last = (frame_count - 1) // stride * stride
        loop = opts["short_video"] == "loop"
        return [j * stride if j * stride < frame_count else
                (j * stride) % frame_count if loop else last for j in range(clip_frames)]
    max_start = frame_count - span
    clips = max(int(opts["clips_per_video"]), 1)
    if opts["sampling"] == "random":
        start = random.randrange(max_start + 1)
    elif opts["sampling"] == "uniform":
        start = max_start // 2 if clips == 1 else (clip % clips) * max_start // (clips - 1)
    else:
        step = clip_frames * stride
        start = ((clip % clips) % (max_start // step + 1)) * step
    return [start + j * stride for j in range(clip_frames)]


class VideoClips:
    """The decode stage for video: a callable from an index entry (or the
    bytes of a read stage) to a uint8 T x C x H x W clip tensor.

    Holds, per worker, the file it keeps open (reopen: reuse). recorder
    and clock are the worker's Recorder and SubStageClock, or None without
    stage timing."""

    def __init__(self, opts):
        self.opts = opts
        self.recorder = None
        self.clock = None
        self.counter_base = 0
        self.container = None
        self.stream = None
        self.source = None
        self.sequential_clip = -1

    def _lap(self, sub):
        if self.clock is not None:
            self.clock.lap(sub)

    def _count(self, counter, value=1):
        if self.recorder is not None:
            self.recorder.add_counter(self.counter_base + counter, value)

    def close(self):
        """Closes the file kept open, if any."""
        if self.container is not None:
            self.container.close()
        self.container = self.stream = self.source = None

    def _open(self, source):
        """Opens source (a path, or bytes) unless it is the file kept open;
        returns True when it reuses the open file."""
        import av
        if self.container is not None and isinstance(source, str) and source == self.source:
            return True
        self.close()
        import io
        self.container = av.open(source if isinstance(source, str) else io.BytesIO(source))
        self.stream = self.container.streams.video[0]
        self.stream.thread_type = "FRAME" if self.opts["thread_type"] == "frame" else "SLICE"
        self.stream.codec_context.thread_count = int(self.opts["threads"])
        self.source = source
        self._count(OPENS)
        return False

    def _frame_count(self):
        stream = self.stream
        if stream.frames:
            return int(stream.frames)
        duration = stream.duration or 0
        return int(round(float(duration * stream.time_base * stream.average_rate)))

    def _out_size(self):
        """(height, width) of the converted frames, as pbench's output_size."""
        ctx = self.stream.codec_context
        h, w = ctx.height, ctx.width
        size, side = list(self.opts["size"] or []), int(self.opts["shorter_side"] or 0)
        if size:
            return int(size[0]), int(size[1] if len(size) > 1 else size[0])
        if side > 0:
            if h <= w:
                return side, max(1, (w * side + h // 2) // h)
            return max(1, (h * side + w // 2) // w), side
        return h, w

    def _seek(self, frame):
        """Seeks to the keyframe at or before frame."""
        stream = self.stream
        start_pts = stream.start_time or 0
        pts = start_pts + int(round(frame / stream.average_rate / stream.time_base))
        self.container.seek(pts, backward=True, any_frame=False, stream=stream)
        self._count(SEEKS)

    def __call__(self, sample):
        """Decodes one clip of the sample (an index Entry or bytes)."""
        if self.clock is not None:
            self.clock.reset()
        try:
            clip = self._decode(sample)
        except Exception:
            self.close()  # a failed file is not kept open
            raise
        finally:
            if self.clock is not None:
                self.clock.flush()
        if self.opts["reopen"] == "per_clip":
            self.close()
        return clip

    def _decode(self, sample):
        import torch
        source = sample if isinstance(sample, (bytes, bytearray)) else os.fsdecode(sample.path)
        reusing = self._open(source)
        self._lap(OPEN)
        opts = self.opts
        clip = 0
        if opts["sampling"] == "uniform":
            clip = random.randrange(max(int(opts["clips_per_video"]), 1))
        elif opts["sampling"] == "sequential":
            clip = (self.sequential_clip + 1) % max(int(opts["clips_per_video"]), 1) if reusing else 0
        wanted = clip_indices(self._frame_count(), opts, clip)
        self.sequential_clip = clip
        out_h, out_w = self._out_size()
        frames = self._decode_frames(sorted(set(wanted)), out_h, out_w, reusing)
        slots = [frames[i] for i in wanted]
        self._count(DELIVERED, len(slots))
        clip_thwc = np.stack(slots)
        tensor = torch.from_numpy(clip_thwc).permute(0, 3, 1, 2)
        self._lap(CONVERT)
        return tensor

    def _decode_frames(self, targets, out_h, out_w, reusing):
        """Seeks and decodes forward; returns {frame number: HxWx3 array}
        for every target. Raises SampleError when the stream cannot give
        them."""
        import av
        stream = self.stream
        seek_keyframe = self.opts["seek"] == "keyframe"
        first = targets[0]
        seek_frame = first if seek_keyframe else 0
        if seek_keyframe or reusing:
            self._seek(seek_frame)
        self._lap(SEEK)
        tb, fps = stream.time_base, stream.average_rate
        start_pts = stream.start_time or 0
        conceal = self.opts["corrupt_frames"] == "conceal"
        out, held, retries, fresh = {}, None, 0, True
        pending = list(targets)
        while pending:
            landed_late = False
            for packet in self.container.demux(stream):
                self._lap(DEMUX)
                try:
                    decoded = packet.decode()
                except av.AVError as e:
                    if not conceal:
                        raise SampleError("corrupt video packet: %s" % e)
                    decoded = []
                self._lap(DECODE)
                for frame in decoded:
                    self._count(DECODED)
                    if frame.pts is None:
                        index = (held[0] + 1) if held else 0
                    else:
                        index = int(round(float((frame.pts - start_pts) * tb * fps)))
                    if fresh and index > pending[0] and seek_keyframe and retries < MAX_SEEK_RETRIES:
                        landed_late = True
                        break
                    fresh = False
                    while pending and pending[0] < index:
                        if held is None:
                            raise SampleError("cannot decode frame %d: the first frame decoded "
                                              "is %d" % (pending[0], index))
                        out[pending.pop(0)] = self._convert(held[1], out_h, out_w)
                    if pending and pending[0] == index:
                        out[pending.pop(0)] = self._convert(frame, out_h, out_w)
                    held = (index, frame)
                    self._lap(CONVERT)
                if landed_late or not pending:
                    break
            if landed_late:
                retries += 1
                fresh, held = True, None
                seek_frame = 0 if retries == MAX_SEEK_RETRIES else max(
                    0, seek_frame - (2 << (2 * (retries - 1))))
                self._seek(seek_frame)
                self._lap(SEEK)
                continue
            break
        if pending:
            self._deliver_past_end(pending, held, out, out_h, out_w)
        return out

    def _deliver_past_end(self, pending, held, out, out_h, out_w):
        """The stream ended first: within one frame of its count the last
        frame fills the rest (rounding), else SampleError."""
        if held is None or pending[0] > held[0] + 1:
            raise SampleError("the stream ends at frame %d, the clip needs frame %d"
                              % (held[0] if held else -1, pending[0]))
        for index in pending:
            out[index] = self._convert(held[1], out_h, out_w)
        self.close()  # at the end of the stream: the next clip opens it again

    @staticmethod
    def _convert(frame, out_h, out_w):
        return frame.reformat(width=out_w, height=out_h, format="rgb24",
                              interpolation="BILINEAR").to_ndarray()
