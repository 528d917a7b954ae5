"""pbench's side of the engine protocol, for the tests: writes a sample
index, starts `python3 -m pbench_torch` with stdin for commands and fd 3
for records, sends commands and parses the frames that come back.

Also makes the tiny datasets the tests run on (JPEGs, a tar shard, a
video, a corrupt JPEG) and configs shaped as pbench's resolved config."""
import copy
import importlib.util
import json
import os
import select
import struct
import subprocess
import sys
import tarfile

ENGINE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRAME_HEAD = struct.Struct("<II")
HEADER_DESCRIPTION = os.path.join(os.path.dirname(ENGINE_ROOT), "batch_header.json")


def read_header_description(path=HEADER_DESCRIPTION):
    """The reader's batch header layout, from the description the engine's
    writer and pbench's C struct are held to: (field names, Struct)."""
    with open(path) as f:
        fields = json.load(f)["fields"]
    codes = {"u64": "Q", "u32": "I", "i32": "i"}
    return (tuple(name for name, _ in fields),
            struct.Struct("<" + "".join(codes[kind] for _, kind in fields)))


BATCH_FIELDS, BATCH_HEADER = read_header_description()
SKIP_REASON = ("torch is not installed: apt-get install python3-torch python3-torchvision "
               "python3-av")


def torch_available():
    return all(importlib.util.find_spec(name) is not None
               for name in ("torch", "torchvision", "PIL", "numpy"))


# --- data -----------------------------------------------------------------

def make_jpegs(folder, count, size=(64, 48), seed=0):
    """count JPEGs of size (w, h) with random-ish content; their paths."""
    from PIL import Image
    import numpy as np
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    paths = []
    for i in range(count):
        pixels = rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)
        path = os.path.join(folder, "img%04d.jpg" % i)
        Image.fromarray(pixels).save(path, quality=85)
        paths.append(path)
    return paths


def make_corrupt_jpeg(path):
    """A file that starts like a JPEG and is not one."""
    with open(path, "wb") as f:
        f.write(b"\xff\xd8\xff\xe0" + b"not a jpeg at all" * 8)
    return path


def make_tar(path, jpeg_paths):
    """A WebDataset-style shard of the JPEGs; index records for them
    (offset of each member's data in the shard)."""
    with tarfile.open(path, "w") as tar:
        for p in jpeg_paths:
            tar.add(p, arcname=os.path.basename(p))
    records = []
    with tarfile.open(path, "r") as tar:
        for member in tar.getmembers():
            key = os.path.splitext(member.name)[0]
            records.append((member.offset_data, member.size, key, path))
    return records


def make_video(path, frames=24, size=(96, 64), gop=8):
    """A small H.264 (or mpeg4) video of frames frames, a keyframe every
    gop frames."""
    import av
    import numpy as np
    with av.open(path, "w") as container:
        codec = "libx264" if "libx264" in av.codecs_available else "mpeg4"
        stream = container.add_stream(codec, rate=24)
        stream.width, stream.height = size
        stream.pix_fmt = "yuv420p"
        stream.codec_context.gop_size = gop
        if codec == "libx264":
            stream.options = {"g": str(gop), "keyint_min": str(gop), "bf": "0"}
        for i in range(frames):
            image = np.full((size[1], size[0], 3), (i * 10) % 255, dtype=np.uint8)
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def file_records(paths):
    """Index records of loose files, in pbench's (sorted) order."""
    return [(-1, os.path.getsize(p), "", p) for p in sorted(paths)]


def write_index(path, records):
    """The NUL-separated index pbench writes: offset, size, member, path."""
    with open(path, "wb") as f:
        for offset, size, member, file_path in records:
            f.write(b"%d\0%d\0" % (offset, size) + member.encode() + b"\0" +
                    os.fsencode(file_path) + b"\0")
    return path


# --- configs --------------------------------------------------------------

IMAGE_CONFIG = {
    "dataset": {"path": "", "shuffle": False, "seed": 0, "epochs": 0, "max_samples": 0,
                "shard": "0/1", "cache": "none", "format": "files", "shuffle_buffer": 0,
                "python": "", "args": {}},
    "pipeline": [
        {"read": {"block_kib": 0}},
        {"decode": {"decoder": "jpeg", "output": "rgb", "scale": "1", "cmyk": "convert",
                    "exif_orientation": True, "strict": True, "dct": "accurate",
                    "fast_upsample": False, "max_pixels": 89478485, "plan_width": 640,
                    "plan_height": 480, "fused_crop": True}},
        {"random_resized_crop": {"size": [32, 32], "scale": [0.08, 1.0],
                                 "ratio": [0.75, 1.3333333333333333],
                                 "interpolation": "bilinear"}},
        {"flip": {"p": 0.5, "device": "cpu"}},
        {"normalize": {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225],
                       "pixel_scale": 255.0, "dtype": "float32", "layout": "chw",
                       "device": "cpu"}},
    ],
    "loader": {"workers": 0, "batch_size": 4, "prefetch_factor": 2, "pin_memory": False,
               "drop_last": False, "in_order": True, "device_prefetch": 0, "affinity": "none",
               "engine": "torch", "python": "", "python_path": "", "persistent_workers": False,
               "torch_decode": "pil"},
    "run": {"warmup_batches": 1, "min_time_s": 1, "max_time_s": 2, "repeats": 1, "step_ms": 0,
            "on_error": "skip", "stage_timing": True, "max_error_pct": 100,
            "stage_timeout_s": 30},
}


def image_config(**changes):
    """IMAGE_CONFIG with dotted keys changed: image_config(**{"loader.workers": 2})."""
    config = copy.deepcopy(IMAGE_CONFIG)
    for key, value in changes.items():
        node = config
        parts = key.split(".")
        for part in parts[:-1]:
            node = node[part]
        node[parts[-1]] = value
    return config


# --- the engine -----------------------------------------------------------

class Engine:
    """A running engine: send() commands, frames() / until() to read."""

    def __init__(self, cwd=None, timeout_s=60.0):
        read_fd, write_fd = os.pipe()
        env = dict(os.environ, PYTHONPATH=ENGINE_ROOT, PBENCH_ENGINE_PROTOCOL="1")

        def records_on_fd3():
            os.dup2(write_fd, 3)

        self.process = subprocess.Popen(
            [sys.executable, "-m", "pbench_torch"], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd, env=env,
            pass_fds=(3,) if write_fd != 3 else (), preexec_fn=records_on_fd3)
        os.close(write_fd)
        self.read_fd = read_fd
        self.timeout_s = timeout_s
        self.buffer = b""

    def send(self, command_type, **fields):
        line = json.dumps(dict(fields, type=command_type)) + "\n"
        self.process.stdin.write(line.encode())
        self.process.stdin.flush()

    def _read_exact(self, count):
        while len(self.buffer) < count:
            ready, _, _ = select.select([self.read_fd], [], [], self.timeout_s)
            if not ready:
                raise TimeoutError("no frame for %.0f s" % self.timeout_s)
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise EOFError("engine closed fd 3; stderr: %s" % self.stderr_tail())
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def frame(self):
        """The next frame: a dict; a batch has "type": "batch", its
        header fields and "rows" (lists of ints)."""
        length, frame_type = FRAME_HEAD.unpack(self._read_exact(8))
        payload = self._read_exact(length - 4)
        if frame_type == 1:
            return json.loads(payload.decode())
        if frame_type != 2:
            raise ValueError("frame type %d" % frame_type)
        batch = dict(zip(BATCH_FIELDS, BATCH_HEADER.unpack_from(payload)))
        batch["type"] = "batch"
        width = 1 + 3 * batch["columns"] + batch["counters"]
        body = payload[BATCH_HEADER.size:]
        if len(body) != 8 * width * batch["records"]:
            raise ValueError("batch body of %d bytes for %d records of %d"
                             % (len(body), batch["records"], width))
        values = struct.unpack("<%dq" % (len(body) // 8), body)
        batch["rows"] = [list(values[i:i + width]) for i in range(0, len(values), width)]
        return batch

    def until(self, *types):
        """Frames up to and including the first of one of types."""
        frames = []
        while True:
            frame = self.frame()
            frames.append(frame)
            if frame["type"] in types:
                return frames

    def open(self, config, index="", stage_timing=True, config_dir="."):
        self.send("open", protocol=1, config=config, index=index, config_dir=config_dir,
                  stage_timing=stage_timing)
        return self.until("ready", "fatal")[-1]

    def repeat(self, repeat=0, stage_timing=True, stop_after=None):
        """Runs a repeat; with stop_after=N sends stop after N batches
        (N = 0: with the repeat command itself, so the stop has arrived
        before the first batch is done). Returns every frame up to
        repeat_end (or fatal)."""
        self.send("repeat", repeat=repeat, stage_timing=stage_timing)
        if stop_after == 0:
            self.send("stop")
        frames, batches = [], 0
        while True:
            frame = self.frame()
            frames.append(frame)
            if frame["type"] == "batch":
                batches += 1
                if stop_after is not None and batches == stop_after:
                    self.send("stop")
            if frame["type"] in ("repeat_end", "fatal"):
                return frames

    def close(self):
        """Sends close; returns the exit status."""
        try:
            self.send("close")
            self.process.stdin.close()
        except BrokenPipeError:
            pass
        return self.wait()

    def wait(self):
        try:
            status = self.process.wait(self.timeout_s)
        finally:
            os.close(self.read_fd)
            self.process.stderr.close()
            if not self.process.stdin.closed:
                try:
                    self.process.stdin.close()
                except BrokenPipeError:
                    pass
        return status

    def stderr_tail(self):
        try:
            self.process.wait(5)
            if self.process.stderr.closed:
                return ""
            return self.process.stderr.read().decode(errors="replace")[-2000:]
        except Exception as e:
            return "(%s)" % e
