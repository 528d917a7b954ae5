"""The YAML pipeline as torchvision transforms (docs/engines.md's table).

build_pipeline turns the config's stage list into Stage objects: each one a
timed column (name and parent as pbench's rows), its callable, and for the
video decoder its sub-stage columns and counters. Anything the engine
cannot run is a ConfigError naming the option (pipeline[2].interpolation),
never a silent substitute."""
import io
import os

from .errors import ConfigError, SampleError, sent
from .protocol import ENGINE_RULES
from . import remote, video

IMAGE_DECODERS = ("jpeg", "image", "auto")


class Stage:
    """One pipeline stage: its column name, its callable (sample in,
    sample out), and the sub-stage columns and counters it fills."""

    def __init__(self, name, fn, substages=(), counters=(), decoder=None):
        self.name = name
        self.fn = fn
        self.substages = list(substages)
        self.counters = list(counters)
        self.decoder = decoder  # the VideoClips, which records sub-stages itself


def stage_list(pipeline):
    """[(kind, options)] from the config's list of one-key objects."""
    stages = []
    for position, item in enumerate(pipeline or []):
        if not isinstance(item, dict) or len(item) != 1:
            raise ConfigError("pipeline[%d]" % position, "a stage is an object of one key")
        (kind, options), = item.items()
        stages.append((kind, dict(options or {})))
    return stages


def check_device(options, where):
    if options.get("device", "cpu") != "cpu":  # a stage without device runs on the CPU
        raise ConfigError(where + ".device", "the torch engine runs its transforms on the CPU "
                          "(in the DataLoader's workers); device stages are pbench's own")


def formatted(value):
    """An option's value as pbench formats it (pb_opt_format): booleans as
    true or false, whole numbers without a point."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def setting(config, key):
    """The config's value at a dotted key (loader.torch_decode), formatted;
    None when the config has none."""
    value = config
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return formatted(value)


def refuse_unrunnable(owner, options, where, config, rules=None):
    """ConfigError(where.option) for the first of owner's options (a
    stage's, or its decoder's) whose value the torch engine cannot run as
    pbench means it: the rules of engines/engine_rules.json (ENGINE_RULES),
    which pbench applies too before it starts the engine. A rule with a
    condition ("loader.torch_decode: torchvision") holds where config's
    setting has that value."""
    for rule in ENGINE_RULES if rules is None else rules:
        if rule["owner"] != owner or rule["option"] not in options:
            continue
        if rule["when"]:
            key, _, value = rule["when"].partition(": ")
            if setting(config, key) != value:
                continue
        value = formatted(options[rule["option"]])
        if value not in rule["allowed"]:
            raise ConfigError("%s.%s" % (where, rule["option"]),
                              "the torch engine cannot run %s's %s: %s (%s); allowed%s: %s, or %s"
                              % (owner, rule["option"], value, rule["why"],
                                 " with " + rule["when"] if rule["when"] else "",
                                 ", ".join(rule["allowed"]),
                                 rule["instead"] or "loader.engine: pbench"))


def interpolation(options, where):
    """torchvision's InterpolationMode for the stage's interpolation (one
    refuse_unrunnable let through: bilinear or nearest)."""
    from torchvision.transforms import InterpolationMode
    name = sent(options, "interpolation", where)
    return InterpolationMode.BILINEAR if name == "bilinear" else InterpolationMode.NEAREST


def size_of(value, where):
    """A size option (N, [N] or [h, w]) as torchvision's (h, w)."""
    if isinstance(value, int):
        return (value, value)
    value = list(value or [])
    if len(value) == 1:
        return (int(value[0]), int(value[0]))
    if len(value) == 2:
        return (int(value[0]), int(value[1]))
    raise ConfigError(where, "a size is N or [height, width]")


def target_size(stages, position):
    """(width, height) the stage after position needs at least, for
    scale: auto (Image.draft), or None when no sizing stage follows."""
    if position + 1 >= len(stages):
        return None
    kind, options = stages[position + 1]
    where = "pipeline[%d]" % (position + 1)
    if kind in ("random_resized_crop", "center_crop", "random_crop"):
        h, w = size_of(sent(options, "size", where), where)
        return (w, h)
    if kind == "resize":
        side = int(sent(options, "shorter_side", where) or 0)
        if side > 0:
            return (side, side)
        h, w = size_of(sent(options, "size", where), where)
        return (w, h)
    return None


def read_bytes(entry):
    """The sample's bytes: the whole file, or the tar member at its offset."""
    with open(entry.path, "rb") as f:
        if entry.offset >= 0:
            f.seek(entry.offset)
            return f.read(entry.size)
        return f.read()


def read_bytes_cold(entry):
    """read_bytes, then the file's pages dropped from the page cache
    (dataset.cache: cold), as pbench's own read stage does: every epoch
    reads storage."""
    with open(entry.path, "rb") as f:
        if entry.offset >= 0:
            f.seek(entry.offset)
            data = f.read(entry.size)
            os.posix_fadvise(f.fileno(), entry.offset, entry.size, os.POSIX_FADV_DONTNEED)
        else:
            data = f.read()
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        return data


class RemoteRead:
    """read for a dataset in object storage (remote.py): a URL's bytes,
    the request's connect, ttfb and transfer as read's sub-rows and its
    counters (remote.COUNTERS) when stage timing is on; a local path read
    as read_bytes reads it. prefetch(entries) requests a batch's objects
    ahead (dataset.requests_in_flight). The counters of a read that failed
    (a bad sample, whose record is dropped) go to this worker's next read,
    so no request goes uncounted."""

    def __init__(self, reader):
        self.remote = reader
        self.recorder = None  # set per repeat by the dataset (None: untimed)
        self.clock = None
        self.counter_base = 0
        self.carried = dict.fromkeys(remote.COUNTERS, 0)

    def prefetch(self, entries):
        self.remote.prefetch(entries)

    def check(self, entries):
        """The store's check at open (Remote.check) on the first URL."""
        for entry in entries:
            if remote.is_url(entry.path):
                self.remote.check(os.fsdecode(entry.path))
                return

    def __call__(self, entry):
        if not remote.is_url(entry.path):
            return read_bytes(entry)
        try:
            data, log = self.remote.take(entry)
        except remote.ObjectError as e:
            if e.log is not None:
                for name in remote.COUNTERS:
                    self.carried[name] += e.log.counts[name]
            raise
        if self.recorder is not None:
            self._record(log)
        return data

    def _record(self, log):
        clock = self.clock
        if clock is not None:
            clock.reset()
            for sub in range(len(remote.SPANS)):
                if log.start_ns[sub]:
                    clock.add(sub, log.start_ns[sub], log.wall_ns[sub], log.cpu_ns[sub])
            clock.flush()
        for k, name in enumerate(remote.COUNTERS):
            value = log.counts[name] + self.carried[name]
            if value:
                self.recorder.add_counter(self.counter_base + k, value)
        self.carried = dict.fromkeys(remote.COUNTERS, 0)


def read_stage(dataset):
    """The read stage for the dataset: RemoteRead for a URL, else the
    file read (dropping the pages again for dataset.cache: cold)."""
    if remote.is_url(str(sent(dataset, "path", "dataset") or "")):
        reader = RemoteRead(remote.Remote(remote.Options(dataset)))
        return Stage("read", reader, ["read." + s for s in remote.SPANS], remote.COUNTERS,
                     decoder=reader)
    cold = sent(dataset, "cache", "dataset") == "cold"
    return Stage("read", read_bytes_cold if cold else read_bytes)


JPEG_COUNTERS = ("scaled", "progressive", "grayscale", "cmyk")


class PilDecode:
    """decode with PIL: Image.open(BytesIO(data)), draft for scale: auto,
    exif_transpose, convert to RGB (or L). Counts, per sample, pbench's
    JPEG decoder counters: scaled (draft reduced it), progressive,
    grayscale (an L file), cmyk (a CMYK file) when stage timing is on."""

    def __init__(self, mode, exif, draft_size, max_pixels):
        self.mode = mode
        self.exif = exif
        self.draft_size = draft_size
        self.max_pixels = max_pixels
        self.recorder = None     # set per repeat by the dataset (None: untimed)
        self.clock = None
        self.counter_base = 0

    def _count(self, image, full_size):
        """Adds this sample's counters (only with stage timing)."""
        recorder, base = self.recorder, self.counter_base
        if image.size != full_size:
            recorder.add_counter(base, 1)
        if image.info.get("progressive") or image.info.get("progression"):
            recorder.add_counter(base + 1, 1)
        if image.mode == "L":
            recorder.add_counter(base + 2, 1)
        elif image.mode == "CMYK":
            recorder.add_counter(base + 3, 1)

    def __call__(self, data):
        from PIL import Image, ImageOps
        if not isinstance(data, (bytes, bytearray)):
            data = read_bytes(data)
        image = Image.open(io.BytesIO(data))
        if image.width * image.height > self.max_pixels:
            raise SampleError("%dx%d is more than decode.max_pixels (%d)"
                              % (image.width, image.height, self.max_pixels))
        full_size = image.size
        if self.draft_size is not None:
            image.draft(self.mode, self.draft_size)
        if self.recorder is not None:
            self._count(image, full_size)
        if self.exif:
            image = ImageOps.exif_transpose(image)
        return image.convert(self.mode)


class TorchvisionDecode:
    """decode with torchvision.io: a C x H x W uint8 tensor."""

    def __init__(self, gray, jpeg_only):
        self.gray = gray
        self.jpeg_only = jpeg_only

    def __call__(self, data):
        import warnings
        import torch
        import torchvision.io as tvio
        if not isinstance(data, (bytes, bytearray)):
            data = read_bytes(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # frombuffer on read-only bytes
            encoded = torch.frombuffer(data, dtype=torch.uint8)
        mode = tvio.ImageReadMode.GRAY if self.gray else tvio.ImageReadMode.RGB
        if self.jpeg_only:
            return tvio.decode_jpeg(encoded, mode=mode)
        return tvio.decode_image(encoded, mode=mode)


class NormalizeStage:
    """normalize: ToTensor() (PIL) or ConvertImageDtype(float) (a uint8
    tensor) then Normalize(mean, std), cast to dtype; a T x C x H x W clip
    is permuted to C x T x H x W for layout cthw."""

    def __init__(self, mean, std, half, cthw):
        from torchvision import transforms
        self.to_tensor = transforms.ToTensor()
        self.normalize = transforms.Normalize(mean, std)
        self.half = half
        self.cthw = cthw

    def __call__(self, value):
        import torch
        from torchvision.transforms import functional as F
        if isinstance(value, torch.Tensor):
            value = F.convert_image_dtype(value, torch.float32)
        else:
            value = self.to_tensor(value)
        value = self.normalize(value)
        if self.cthw and value.dim() == 4:
            value = value.permute(1, 0, 2, 3)
        return value.half() if self.half else value


def decode_stage(options, where, stages, position, torch_decode):
    """The decode stage for the config's decoder, or ConfigError."""
    decoder = sent(options, "decoder", where)
    if decoder == "video":
        opts = video.check_options(options, where)
        clips = video.VideoClips(opts)
        subs = [("decode." + s) for s in video.SUBSTAGES]
        return Stage("decode", clips, subs, video.COUNTERS, decoder=clips)
    if decoder not in IMAGE_DECODERS:
        raise ConfigError(where + ".decoder", "the torch engine cannot run the %r decoder (it "
                          "decodes jpeg, image and auto with PIL or torchvision, and video with "
                          "PyAV)" % decoder)
    # scale, dct, fast_upsample, output, cmyk, and exif_orientation or
    # scale: auto under torchvision's decode: refuse_unrunnable, before.
    scale = str(sent(options, "scale", where))
    output = sent(options, "output", where)
    if torch_decode == "torchvision":
        return Stage("decode", TorchvisionDecode(output == "gray", decoder == "jpeg"))
    if torch_decode != "pil":
        raise ConfigError("loader.torch_decode", "%r is not pil or torchvision" % torch_decode)
    draft = target_size(stages, position) if scale == "auto" else None
    # The image decoder's table has no exif_orientation: like pbench's, it
    # leaves the pixels as stored.
    pil = PilDecode("L" if output == "gray" else "RGB", bool(options.get("exif_orientation")),
                    draft, int(sent(options, "max_pixels", where)))
    counters = JPEG_COUNTERS if decoder == "jpeg" else ()
    return Stage("decode", pil, counters=counters, decoder=pil if counters else None)


def transform_stage(kind, options, where, is_video):
    """A torchvision transform stage (everything but read and decode)."""
    from torchvision import transforms
    check_device(options, where)
    if kind == "random_resized_crop":
        return transforms.RandomResizedCrop(
            size_of(sent(options, "size", where), where + ".size"),
            scale=tuple(sent(options, "scale", where)),
            ratio=tuple(sent(options, "ratio", where)),
            interpolation=interpolation(options, where))
    if kind == "resize":
        side = int(sent(options, "shorter_side", where) or 0)
        size = side if side > 0 else size_of(sent(options, "size", where), where + ".size")
        return transforms.Resize(size, interpolation=interpolation(options, where))
    if kind == "center_crop":
        return transforms.CenterCrop(size_of(sent(options, "size", where), where + ".size"))
    if kind == "random_crop":
        return transforms.RandomCrop(size_of(sent(options, "size", where), where + ".size"))
    if kind == "flip":
        return transforms.RandomHorizontalFlip(float(sent(options, "p", where)))
    if kind == "color_jitter":
        return color_jitter(options, where)
    if kind == "normalize":
        return normalize(options, where, is_video)
    raise ConfigError(where, "the torch engine cannot run the %r stage (pbench's own engine "
                      "runs it: loader.engine: pbench)" % kind)


def color_jitter(options, where):
    """ColorJitter(brightness, contrast, saturation): J or [lo, hi] each."""
    from torchvision import transforms
    factors = {}
    for key in ("brightness", "contrast", "saturation"):
        value = sent(options, key, where)
        value = list(value) if isinstance(value, (list, tuple)) else [value]
        factors[key] = float(value[0]) if len(value) == 1 else (float(value[0]), float(value[1]))
    return transforms.ColorJitter(**factors)


def normalize(options, where, is_video):
    """The normalize stage, after checking dtype, layout and pixel_scale."""
    dtype = sent(options, "dtype", where)  # float32 or float16: refuse_unrunnable
    layout = sent(options, "layout", where)
    allowed = ("cthw", "tchw") if is_video else ("chw",)
    if layout not in allowed:
        raise ConfigError(where + ".layout", "ToTensor gives %s; use layout %s"
                          % ("T x C x H x W clips" if is_video else "C x H x W",
                             " or ".join(allowed)))
    if float(sent(options, "pixel_scale", where)) != 255.0:
        raise ConfigError(where + ".pixel_scale", "ToTensor divides by 255; use pixel_scale 255")
    return NormalizeStage(list(sent(options, "mean", where)), list(sent(options, "std", where)),
                          dtype == "float16", layout == "cthw")


def python_stage(options, where, import_callable):
    """A `python: {callable: "module:fn"}` stage, its column named after fn."""
    name = options.get("callable", "")
    fn = import_callable(name, where + ".callable")
    return Stage(getattr(fn, "__name__", name.split(":")[-1]), fn)


def build_pipeline(config, import_callable):
    """The config's pipeline as a list of Stage, checked. import_callable
    (spec, option) resolves "module:fn" (userdata.import_callable)."""
    stages = stage_list(config.get("pipeline"))
    torch_decode = sent(sent(config, "loader", ""), "torch_decode", "loader")
    is_video = any(kind == "decode" and opts.get("decoder") == "video" for kind, opts in stages)
    built = []
    for position, (kind, options) in enumerate(stages):
        where = "pipeline[%d]" % position
        refuse_unrunnable(kind, options, where, config)
        if kind == "decode":
            refuse_unrunnable(sent(options, "decoder", where), options, where, config)
        if kind == "read":
            built.append(read_stage(sent(config, "dataset", "")))
        elif kind == "decode":
            check_device(options, where)
            built.append(decode_stage(options, where, stages, position, torch_decode))
        elif kind == "python":
            built.append(python_stage(options, where, import_callable))
        else:
            built.append(Stage(kind, transform_stage(kind, options, where, is_video)))
    names = unique_names([stage.name for stage in built])
    for stage, name in zip(built, names):
        stage.name = name
    return built


def unique_names(names):
    """names with repeats numbered from the second: Resize, Resize_2."""
    seen, unique = {}, []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        unique.append(name if seen[name] == 1 else "%s_%d" % (name, seen[name]))
    return unique
