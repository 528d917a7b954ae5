"""pbench's hook inside a wrapped training job (docs/wrap.md).

Loaded at interpreter start-up by startup/sitecustomize.py in every Python
process of the job (its main process, DataLoader workers under fork, spawn
and forkserver, the ranks a launcher starts) when PBENCH_WRAP_SOCKET is set.
It imports nothing heavy: torch is patched when the job itself imports it.

What it patches in torch lives here alone (patch_dataloader, patch_fetch),
and is checked against the internals it relies on (check_internals); the
versions it was tested with are TESTED_TORCH. Every patch calls torch's own
code and hands the job exactly what torch returned: the hook measures, it
never changes a batch. A failure inside the hook turns it off in that
process with one line on stderr, and the job goes on.

Each process sends its records over its own connection to the relay
(pbench_wrap.relay; over TCP where its Unix socket is out of reach, as on
another machine: pbench_wrap.nodes): frames of u32 length (the bytes after it), u32 type,
payload. Type 1 is JSON; 2 a batch the loop took (BATCH); 3 a batch a
loader built (FETCH, then its sample records)."""
import array
import atexit
import json
import os
import socket
import struct
import sys
import threading
import time

SOCKET_ENV = "PBENCH_WRAP_SOCKET"
CONFIG_ENV = "PBENCH_WRAP_CONFIG"
RELAY_ENV = "PBENCH_WRAP_RELAY"   # the relay's pid: the job's first process dies with it
ADDR_ENV = "PBENCH_WRAP_ADDR"     # the relay's TCP address, for ranks on other machines
HOST_ENV = "PBENCH_WRAP_HOST"     # the relay's hostname (pbench_wrap.nodes)
TESTED_TORCH = ("1.13",)

MSG_JSON = 1
MSG_BATCH = 2
MSG_FETCH = 3
HEAD = struct.Struct("<II")
# pid and number of the loader (the process that made it), the worker that
# built the batch (-1: the loop's own process, or unknown), next() called,
# next() returned, the samples the loop's own count sees in it.
BATCH = struct.Struct("<IIiQQI")
# loader (pid, number), worker, samples given to collate, columns S,
# records R, first sample started, collate ended; then R x (1 + 3S) u64.
FETCH = struct.Struct("<IIiIIIQQ")
# The columns pbench reads (engines/shared.json, which pbench's C side is
# checked against); getitem and collate are two of them.
with open(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__)))), "shared.json")) as _shared:
    MAX_COLUMNS = json.load(_shared)["engine_max_columns"] - 2

monotonic_ns = time.monotonic_ns
thread_time_ns = time.thread_time_ns


class Link:
    """This process's connection to the relay, made on first use and again
    after a fork (a child never writes on its parent's connection)."""

    def __init__(self):
        self.pid = None
        self.sock = None
        self.lock = threading.Lock()
        self.off = False

    def send(self, kind, payload):
        if self.off:
            return
        try:
            with self.lock:
                if self.pid != os.getpid():
                    self._connect()
                self.sock.sendall(HEAD.pack(len(payload) + 4, kind) + payload)
        except OSError as e:
            self.turn_off(self.unreached(e) if self.pid != os.getpid() else
                          "the relay is gone (%s)" % e)

    def unreached(self, error):
        """Why this process never reached the relay, as the relay reads it
        in the job's output (relay.UNREACHED): where it looked, from where."""
        return "could not reach pbench's relay at %s on %s (%s)" % (
            os.environ.get(SOCKET_ENV), socket.gethostname(), error.strerror or error)

    def json(self, message):
        self.send(MSG_JSON, json.dumps(message, separators=(",", ":")).encode("utf-8"))

    def _connect(self):
        if self.sock is not None:
            try:
                self.sock.detach()  # the parent's: left open for it
            except OSError:
                pass
        self.sock = None
        host = socket.gethostname()
        hello = {"type": "hello", "pid": os.getpid(), "ppid": os.getppid(),
                 "argv": list(sys.argv), "rank": rank_of(os.environ),
                 "python": sys.version.split()[0], "host": host}
        address = os.environ.get(ADDR_ENV)
        elsewhere = address and os.environ.get(HOST_ENV) not in (None, host)
        if not elsewhere:  # the relay's machine, or no TCP: its socket
            try:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock = sock
                sock.connect(os.environ[SOCKET_ENV])
                payload = json.dumps(hello).encode("utf-8")
                sock.sendall(HEAD.pack(len(payload) + 4, MSG_JSON) + payload)
            except OSError as e:
                if not address:
                    raise
                local = e
                sock.close()
                self.sock = None
        if self.sock is None:  # another machine, or a private /tmp: TCP, with the token
            from . import nodes
            try:
                self.sock = nodes.connect(address, os.environ.get(nodes.TOKEN_ENV), hello)
            except OSError as e:
                raise OSError(e.errno, "%s; over TCP at %s: %s" % (
                    "another host than pbench's" if elsewhere else
                    (local.strerror or local), address, e.strerror or e))
        self.pid = os.getpid()

    def turn_off(self, why):
        """Off in this process, said once; the job goes on."""
        if not self.off:
            self.off = True
            STATE.active = False
            try:
                sys.stderr.write("pbench wrap: measuring is off in process %d: %s\n"
                                 % (os.getpid(), why))
            except Exception:
                pass


def rank_of(env):
    """The process's rank and world size as a launcher sets them: torchrun
    (RANK, WORLD_SIZE, LOCAL_RANK), mpirun (OMPI_COMM_WORLD_*), Slurm
    (SLURM_PROCID, SLURM_NTASKS); None without one."""
    for rank, size, local in (("RANK", "WORLD_SIZE", "LOCAL_RANK"),
                              ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                               "OMPI_COMM_WORLD_LOCAL_RANK"),
                              ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")):
        if env.get(rank, "").isdigit():
            return {"rank": int(env[rank]), "size": int(env.get(size, "0") or 0),
                    "local": int(env.get(local, "0") or 0) if env.get(local, "0").isdigit()
                    else 0}
    return None


class State:
    """What the hook knows in this process."""

    def __init__(self):
        self.active = True
        self.config = {}
        self.loaders = 0          # DataLoaders this process made
        self.by_dataset = {}      # id(dataset) -> loader key, for 0 workers
        self.worker = None        # (loader key, worker id) in a worker process
        self.row = None           # the sample record being filled
        self.columns = {}         # id(Compose transform) -> column, per fetcher
        self.ideal = None         # --ideal: the batches kept and handed out again
        self.sites = {}           # loader key -> FILE:LINE that made it


STATE = State()
LINK = Link()


def guarded(what):
    """A hook's body that may fail: a failure turns the hook off (with one
    warning) and the job goes on, having lost nothing but the measurement."""
    def wrap(fn):
        def call(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Exception as e:  # the hook's own failure, never the job's
                LINK.turn_off("%s failed: %s: %s" % (what, type(e).__name__, e))
                return None
        return call
    return wrap


# ---- the loop's side: which loaders, and each next() ------------------------

ARG_NAMES = (("num_workers", "workers"), ("batch_size", "batch_size"),
             ("pin_memory", "pin_memory"), ("persistent_workers", "persistent_workers"),
             ("prefetch_factor", "prefetch_factor"), ("drop_last", "drop_last"))


def creation_site():
    """"FILE:LINE" of the job's code that made the DataLoader: the innermost
    frame outside torch and this hook."""
    frame = sys._getframe(2)
    here = os.path.dirname(os.path.abspath(__file__))
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(here) and os.sep + "torch" + os.sep not in name:
            return "%s:%d" % (name, frame.f_lineno)
        frame = frame.f_back
    return "?"


def apply_overrides(bound):
    """Sets the loader arguments pbench was told to (wrap.set), in the
    bound arguments of DataLoader.__init__; returns {name: [script, pbench]}.
    Arguments that would refuse the new values (prefetch_factor and
    persistent_workers with 0 workers) go back to their defaults."""
    overrides = STATE.config.get("overrides") or {}
    args = bound.arguments
    extra = args.get("kwargs") if isinstance(args.get("kwargs"), dict) else None
    changed = {}
    for name, key in ARG_NAMES:
        if key not in overrides:
            continue
        if name in ("batch_size", "drop_last") and args.get("batch_sampler") is not None:
            continue  # the job's batch_sampler makes its batches
        holder = extra if extra is not None and name in extra else args
        before = holder.get(name, bound.signature.parameters[name].default
                            if name in bound.signature.parameters else None)
        if before != overrides[key]:
            changed[name] = [before, overrides[key]]
        holder[name] = overrides[key]
    params = bound.signature.parameters
    if args.get("num_workers", 0) == 0:  # torch refuses these without workers
        for name in ("prefetch_factor", "persistent_workers"):
            if name in args and name in params and args[name] != params[name].default:
                changed.setdefault(name, [args[name], params[name].default])
                args[name] = params[name].default
    return changed


def patch_dataloader(module):
    """DataLoader.__init__ (its name, its arguments, wrap.set), __iter__
    (each epoch) and the iterators' __next__ (the wait, the batch)."""
    import inspect
    loader_cls = module.DataLoader
    base_iter = module._BaseDataLoaderIter
    original_init = loader_cls.__init__
    original_iter = loader_cls.__iter__
    original_next = base_iter.__next__
    signature = inspect.signature(original_init)

    def __init__(self, *args, **kwargs):
        changed = {}
        if STATE.active:
            try:
                bound = signature.bind(self, *args, **kwargs)
                changed = apply_overrides(bound)
                args, kwargs = bound.args[1:], bound.kwargs
            except Exception as e:
                LINK.turn_off("reading DataLoader's arguments failed: %s" % e)
        original_init(self, *args, **kwargs)
        if STATE.active:
            made(self, changed)

    def __iter__(self):
        t = monotonic_ns()
        key = getattr(self, "_pbench_key", None)
        if key is not None and STATE.active:
            TAKEN.send(key)  # the last batch of a loop that left without StopIteration
        ideal = STATE.ideal
        if key is not None and ideal is not None and ideal.iterator is not None and \
                ideal.key == key:
            it = ideal.iterator  # no new epoch's workers: a loader that never waits
        else:
            it = original_iter(self)
        if key is not None and STATE.active:
            try:
                it._pbench_key = key
                LINK.json({"type": "iter", "loader": key, "t": t})
            except Exception as e:
                LINK.turn_off("marking the DataLoader's iterator failed: %s" % e)
        return it

    def __next__(self):
        t_wait = monotonic_ns()  # first: the job's own timer starts about here
        key = self.__dict__.get("_pbench_key")
        if key is None or not STATE.active:
            return original_next(self)
        TAKEN.send(key)
        ideal = STATE.ideal
        if ideal is not None and ideal.serves(key):
            return ideal.next(self, key, original_next, t_wait)
        worker = -1
        info = self.__dict__.get("_task_info")
        if info is not None:
            task = info.get(self.__dict__.get("_rcvd_idx"))
            if task:
                worker = task[0]
        try:
            batch = original_next(self)
        except StopIteration as e:  # the epoch's end
            TAKEN.left(key, t_wait, e)
            raise
        except Exception as e:  # a worker that crashed: the wait ends with no batch
            next_failed(key, t_wait, e)
            raise
        TAKEN.hold(key, worker, t_wait, samples_in(batch))
        return batch

    loader_cls.__init__ = __init__
    loader_cls.__iter__ = __iter__
    base_iter.__next__ = __next__


class Taken:
    """The loop's record of each batch it took, sent when the loop next
    calls on that loader (its next(), iter(), or StopIteration), not in the
    next() that took it: the send, and the relay it wakes, then fall inside
    a wait, where the job's own timer around next() sees them too. The
    relay ends a batch's step when the loop next calls on its loader, so
    the record is no later for it. The loop's last batch is not sent: the
    end of its step is not seen (what the job does after it, and its
    shutdown, are not a step); at exit the batch before it is ended where
    the loop asked for it."""

    def __init__(self):
        self.pid = None
        self.held = {}  # loader key -> the BATCH fields of the loop's latest batch

    def hold(self, key, worker, t_wait, samples):
        """The batch the loop takes now. Its time is read last, after
        anything that allocates (the job's garbage collection, which can
        run a finished iterator's worker shutdown, would fall between it
        and the job's own clock)."""
        if self.pid != os.getpid():  # a forked child holds none of its parent's
            self.pid = os.getpid()
            self.held = {}
        record = self.held[key] = [key[0], key[1], worker, t_wait, 0, samples]
        record[4] = monotonic_ns()

    def send(self, key):
        held = self.held.pop(key, None) if self.pid == os.getpid() else None
        if held is not None:
            LINK.send(MSG_BATCH, BATCH.pack(*held))

    def left(self, key, t_wait, why):
        """The loop called next() at t_wait and got StopIteration (the
        epoch's end): its latest batch's step ended then."""
        LINK.json({"type": "epoch_end", "loader": key, "t": t_wait,
                   "ended": type(why).__name__})

    def at_exit(self):
        if self.pid != os.getpid():
            return
        for key, record in list(self.held.items()):
            LINK.json({"type": "epoch_end", "loader": key, "t": record[3], "ended": "exit"})
        self.held = {}


TAKEN = Taken()


@guarded("noting a failed next()")
def next_failed(key, t_wait, error):
    """The loop's next() raised (torch's "DataLoader worker ... is killed by
    signal"): when its wait began and ended, and why, for the relay."""
    LINK.json({"type": "next_failed", "loader": key, "t_wait": t_wait, "t": monotonic_ns(),
               "error": "%s: %s" % (type(error).__name__, str(error).strip())})


@guarded("noting a DataLoader")
def made(loader, changed):
    """A DataLoader the job made: its key, its name and what was set."""
    STATE.loaders += 1
    key = (os.getpid(), STATE.loaders)
    loader._pbench_key = key
    STATE.by_dataset[id(loader.dataset)] = key
    site = creation_site()
    STATE.sites[key] = site
    loader.worker_init_fn = WorkerInit(key, loader.worker_init_fn,
                                       bool(STATE.config.get("stage_timing", True)))
    context = loader.multiprocessing_context
    import torch
    LINK.json({
        "type": "loader", "loader": key, "site": site,
        "dataset": type(loader.dataset).__module__ + "." + type(loader.dataset).__qualname__,
        "args": {key_: plain(getattr(loader, name, None)) for name, key_ in ARG_NAMES},
        "changed": {name: [plain(a), plain(b)] for name, (a, b) in changed.items()},
        "context": context.get_start_method() if context is not None else
                   __import__("multiprocessing").get_start_method(allow_none=True) or "fork",
        "versions": {"torch": torch.__version__, "python": sys.version.split()[0]},
    })


def plain(value):
    return value if isinstance(value, (int, float, str, bool, type(None))) else repr(value)


def samples_in(batch):
    """The samples the loop sees in a batch (the relay prefers collate's
    count): the length of its first tensor, list or array."""
    for _ in range(4):
        if isinstance(batch, dict):
            batch = next(iter(batch.values()), None)
        elif isinstance(batch, (list, tuple)) and batch and not hasattr(batch, "shape"):
            if isinstance(batch[0], (list, tuple, dict)) or hasattr(batch[0], "shape"):
                batch = batch[0]
            else:
                return len(batch)
        else:
            break
    shape = getattr(batch, "shape", None)
    if shape is not None and len(shape) > 0:
        return int(shape[0])
    return 1 if batch is not None else 0


class WorkerInit:
    """The DataLoader's worker_init_fn, made to tell each worker process
    which loader it serves before the job's own worker_init_fn runs. A
    class, so that it pickles for spawn."""

    def __init__(self, key, user_fn, stage_timing):
        self.key = key
        self.user_fn = user_fn
        self.stage_timing = stage_timing

    def __call__(self, worker_id):
        end_with_parent()
        if STATE.active and os.environ.get(SOCKET_ENV):
            try:
                STATE.worker = (tuple(self.key), worker_id)
                STATE.config.setdefault("stage_timing", self.stage_timing)
                start, cpu = process_start()
                LINK.json({"type": "worker", "loader": self.key, "worker": worker_id,
                           "pid": os.getpid(), "start_ns": start, "ready_ns": monotonic_ns(),
                           "cpu_ns": cpu})
            except Exception as e:
                LINK.turn_off("a worker's start failed: %s" % e)
        if self.user_fn is not None:
            return self.user_fn(worker_id)
        return None

    def __repr__(self):
        return repr(self.user_fn)


def end_with_parent():
    """A DataLoader worker ends when the process that started it has gone
    (pbench killed, the relay and the job's first process with it), even
    when it is stuck where torch's own check never runs: a thread looks
    each second. The job's other processes are the job's own business."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)
    if parent != 1:
        threading.Thread(target=watch, name="pbench-wrap-parent", daemon=True).start()


class Ideal:
    """--ideal (docs/wrap.md): after the warm-up, the first `count` batches
    the loop received are kept (at most `cap` bytes of tensors) and handed
    to it again, in turn, instead of asking the DataLoader: the job's step
    with a loader that never makes it wait. One DataLoader per process: the
    one wrap.loader names, else the first to deliver a batch. Once they are
    kept, that DataLoader's workers are stopped (they would build the
    batches still asked for beside the job's step) and iter() on it gives
    the same iterator again (a new epoch would start workers): as a job
    that trains on batches made once in memory, nothing loads meanwhile."""

    def __init__(self, count, warmup, cap, site):
        self.count = count
        self.warmup = warmup
        self.cap = cap
        self.site = site
        self.key = None
        self.taken = 0
        self.kept = []
        self.bytes = 0
        self.full = False
        self.iterator = None   # the iterator the kept batches came from, once full

    def serves(self, key):
        if self.key is None and (not self.site or STATE.sites.get(key, "").endswith(self.site)):
            self.key = key
        return key == self.key

    def next(self, it, key, original_next, t_wait):
        n = self.taken
        self.taken += 1
        if self.full:
            batch = self.kept[(n - self.warmup) % len(self.kept)]
            TAKEN.hold(key, -2, t_wait, samples_in(batch))
            return batch
        try:
            batch = original_next(it)  # StopIteration passes through, as from the loader
        except StopIteration as e:
            TAKEN.left(key, t_wait, e)
            raise
        except Exception as e:
            next_failed(key, t_wait, e)
            raise
        if n >= self.warmup:
            size = tensor_bytes(batch)
            if self.kept and self.bytes + size > self.cap:
                self.fill(it, "the cap of %d MiB" % (self.cap >> 20))
            else:
                self.kept.append(batch)
                self.bytes += size
                if len(self.kept) >= self.count:
                    self.fill(it, None)
        TAKEN.hold(key, -1, t_wait, samples_in(batch))
        return batch

    def fill(self, it, short):
        self.full = True
        self.iterator = it
        workers = len(getattr(it, "_workers", None) or ())
        stop = getattr(it, "_shutdown_workers", None)
        if workers and stop is not None:
            stop()  # torch's own, as at the epoch's end; the kept batches stay valid
        LINK.json({"type": "ideal", "kept": len(self.kept), "bytes": self.bytes,
                   "asked": self.count, "short": short, "workers_stopped": workers})


def tensor_bytes(batch, depth=0):
    """Bytes of the tensors and arrays a batch holds."""
    if hasattr(batch, "nbytes") and not isinstance(batch, (bytes, bytearray)):
        return int(batch.nbytes)
    if hasattr(batch, "element_size") and hasattr(batch, "nelement"):
        return int(batch.element_size() * batch.nelement())
    if depth < 4 and isinstance(batch, dict):
        return sum(tensor_bytes(v, depth + 1) for v in batch.values())
    if depth < 4 and isinstance(batch, (list, tuple)):
        return sum(tensor_bytes(v, depth + 1) for v in batch)
    return len(batch) if isinstance(batch, (bytes, bytearray)) else 0


def process_start():
    """When this process started, on the monotonic clock, and the CPU it has
    used since: a worker's start-up (a spawned one imports torch and
    unpickles the Dataset), the row worker_start."""
    cpu = time.process_time_ns()
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        ticks = int(stat[stat.rindex(b")") + 2:].split()[19])
        age = time.clock_gettime_ns(time.CLOCK_BOOTTIME) - ticks * 10 ** 9 // os.sysconf(
            "SC_CLK_TCK")
        return max(0, monotonic_ns() - age), cpu
    except (OSError, ValueError, IndexError, AttributeError):
        return 0, cpu


# ---- the loader's side: each sample, transform and collate ------------------

def patch_fetch(module):
    """The fetchers' fetch (one batch in the process that builds it): its
    samples timed one by one, its transforms and its collate."""
    for cls in (module._MapDatasetFetcher, module._IterableDatasetFetcher):
        cls.fetch = timed_fetch(cls.fetch)


def timed_fetch(original):
    def fetch(self, possibly_batched_index):
        if not STATE.active:
            return original(self, possibly_batched_index)
        batch = self.__dict__.get("_pbench_batch")
        if batch is None:
            batch = instrument(self)
            if batch is None:
                return original(self, possibly_batched_index)
        batch.begin()
        result = original(self, possibly_batched_index)
        batch.send()
        return result
    return fetch


@guarded("timing the Dataset")
def instrument(fetcher):
    """Wraps a fetcher's dataset (or its iterator), collate and the
    transforms of the Composes its dataset holds, once."""
    if STATE.worker is not None:
        key, worker = STATE.worker
    else:
        key, worker = STATE.by_dataset.get(id(fetcher.dataset)), -1
    if key is None:
        return None
    timing = bool(STATE.config.get("stage_timing", True))
    names, composes = ["getitem"], []
    if timing:
        for compose in composes_of(fetcher.dataset):
            composes.append(compose)
    transforms = [t for c in composes for t in c.transforms][:MAX_COLUMNS - 3]
    names += unique_names([type(t).__name__ for t in transforms]) + ["collate"]
    if STATE.worker is not None:  # filled by the relay, once per worker process
        names.append("worker_start")
    batch = BatchRecord(key, worker, len(names) if timing else 0)
    batch.transforms = len(transforms)
    batch.collate_column = len(transforms) + 1
    if timing:
        for column, t in enumerate(transforms, start=1):
            for c in composes:
                c.transforms = [TimedTransform(batch, column, x) if x is t else x
                                for x in c.transforms]
        LINK.json({"type": "columns", "loader": key, "names": names})
    if hasattr(fetcher, "dataset_iter"):
        fetcher.dataset_iter = TimedIterator(batch, fetcher.dataset_iter)
    else:
        fetcher.dataset = TimedDataset(batch, fetcher.dataset)
    fetcher.collate_fn = TimedCollate(batch, fetcher.collate_fn)
    fetcher._pbench_batch = batch
    return batch


def is_compose(value):
    return (type(value).__name__ == "Compose" and
            type(value).__module__.startswith("torchvision") and
            isinstance(getattr(value, "transforms", None), list))


def dataset_like(value):
    return (hasattr(value, "__getitem__") and hasattr(value, "__dict__") and
            not isinstance(value, type))


def composes_of(dataset, depth=0, seen=None):
    """torchvision Composes the dataset holds under any attribute name, and
    those of the datasets it wraps (Subset, ConcatDataset), two levels
    deep; each once."""
    seen = set() if seen is None else seen
    found = []
    for value in list(getattr(dataset, "__dict__", {}).values()):
        if id(value) in seen:
            continue
        seen.add(id(value))
        if is_compose(value):
            found.append(value)
        elif depth < 2 and isinstance(value, (list, tuple)):
            for item in value[:16]:
                if dataset_like(item) and id(item) not in seen:
                    seen.add(id(item))
                    found += composes_of(item, depth + 1, seen)
        elif depth < 2 and dataset_like(value):
            found += composes_of(value, depth + 1, seen)
    return found


def unique_names(names):
    seen, out = {}, []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else "%s_%d" % (n, seen[n]))
    return out


class BatchRecord:
    """The records of the batch a process is building: one row per sample,
    (index, then start, end and thread CPU per column), sent as one frame
    when collate is done. One per fetcher; no lock is taken."""

    def __init__(self, key, worker, columns):
        self.key = key
        self.worker = worker
        self.columns = columns
        self.width = 1 + 3 * columns
        self.blank = array.array("Q", [0] * self.width)
        self.rows = array.array("Q")
        self.count = 0
        self.samples = 0
        self.t_first = 0
        self.t_ready = 0
        self.transforms = 0
        self.collate_column = columns - 1

    def begin(self):
        del self.rows[:]
        self.count = 0
        self.samples = 0
        self.t_first = 0
        self.t_ready = 0

    def sample(self, index):
        """Starts a sample's row; returns its offset (or -1 untimed)."""
        if self.t_first == 0:
            self.t_first = monotonic_ns()
        if not self.columns:
            return -1
        offset = len(self.rows)
        self.rows.extend(self.blank)
        self.rows[offset] = index if isinstance(index, int) and index >= 0 else self.count
        self.count += 1
        return offset

    def send(self):
        if self.samples == 0 and self.t_ready == 0:
            return
        rows = self.count if self.columns else 0
        LINK.send(MSG_FETCH, FETCH.pack(self.key[0], self.key[1], self.worker, self.samples,
                                        self.columns if rows else 0, rows, self.t_first,
                                        self.t_ready) + self.rows.tobytes())


class TimedDataset:
    """The fetcher's view of the job's Dataset: each __getitem__ timed as
    the getitem column, less the transforms timed inside it. Everything
    else is the Dataset's own."""

    def __init__(self, batch, dataset):
        self._pbench_batch = batch
        self._pbench_dataset = dataset

    def __getitem__(self, index):
        return timed_sample(self._pbench_batch, index,
                            lambda: self._pbench_dataset[index])

    def __len__(self):
        return len(self._pbench_dataset)

    def __getattr__(self, name):
        return getattr(self.__dict__["_pbench_dataset"], name)


class TimedIterator:
    """An IterableDataset's iterator: each item timed as getitem."""

    def __init__(self, batch, iterator):
        self._pbench_batch = batch
        self._pbench_iterator = iterator
        self._pbench_count = 0

    def __iter__(self):
        return self

    def __next__(self):
        self._pbench_count += 1
        return timed_sample(self._pbench_batch, self._pbench_count - 1,
                            lambda: next(self._pbench_iterator))

    def __getattr__(self, name):
        return getattr(self.__dict__["_pbench_iterator"], name)


def timed_sample(batch, index, get):
    offset = batch.sample(index)
    if offset < 0:
        return get()
    # The row being filled: its batch, its offset, and what the transforms
    # timed inside it add up to (wall, CPU), so that getitem's own time is
    # its time less theirs without a pass over the row's columns.
    inner = [0, 0]
    state = STATE
    previous = state.row
    state.row = (batch, offset, inner)
    cpu = thread_time_ns()
    start = monotonic_ns()
    try:
        value = get()
    except BaseException:  # no sample (an iterator's end, the job's own error)
        state.row = previous
        del batch.rows[offset:]
        batch.count -= 1
        raise
    end = monotonic_ns()
    cpu = thread_time_ns() - cpu
    state.row = previous
    rows = batch.rows
    rows[offset + 1] = start
    rows[offset + 2] = max(start, end - inner[0])
    rows[offset + 3] = max(0, cpu - inner[1])
    return value


class TimedTransform:
    """One transform of a Compose, timed in its column of the sample being
    loaded (outside a sample, it runs untimed). Prints as itself. This is
    the per-sample path: two clocks each side of the transform, and the
    fewest lookups (the column's offset in a row is worked out once)."""

    def __init__(self, batch, column, transform):
        self.batch = batch
        self.column = column
        self.base = 1 + 3 * column
        self.transform = transform

    def __call__(self, *args, **kwargs):
        row = STATE.row
        if row is None or row[0] is not self.batch:
            return self.transform(*args, **kwargs)
        cpu = thread_time_ns()
        start = monotonic_ns()
        result = self.transform(*args, **kwargs)
        end = monotonic_ns()
        cpu = thread_time_ns() - cpu
        base = row[1] + self.base
        rows = self.batch.rows
        if rows[base] == 0:
            rows[base] = start
            rows[base + 1] = end
        else:  # a transform used twice in a sample: its times add up
            rows[base + 1] += end - start
        rows[base + 2] += cpu
        inner = row[2]
        inner[0] += end - start
        inner[1] += cpu
        return result

    def __repr__(self):
        return repr(self.transform)

    def __getattr__(self, name):
        return getattr(self.__dict__["transform"], name)


class TimedCollate:
    """The fetcher's collate: the batch's sample count (what collate was
    given) and its time, in the first record's collate column."""

    def __init__(self, batch, collate):
        self.batch = batch
        self.collate = collate

    def __call__(self, data):
        batch = self.batch
        batch.samples = len(data) if isinstance(data, (list, tuple)) else 1
        if batch.t_first == 0:
            batch.t_first = monotonic_ns()
        cpu = thread_time_ns()
        start = monotonic_ns()
        result = self.collate(data)
        end = monotonic_ns()
        batch.t_ready = end
        if batch.columns and batch.count:
            base = 1 + 3 * batch.collate_column
            batch.rows[base] = start
            batch.rows[base + 1] = end
            batch.rows[base + 2] = thread_time_ns() - cpu
        return result


# ---- installing -------------------------------------------------------------

PATCHES = {"torch.utils.data.dataloader": patch_dataloader,
           "torch.utils.data._utils.fetch": patch_fetch}


def check_internals(name, module):
    """The internals a patch relies on are there; else why not."""
    needs = {"torch.utils.data.dataloader": ("DataLoader", "_BaseDataLoaderIter"),
             "torch.utils.data._utils.fetch": ("_MapDatasetFetcher",
                                                "_IterableDatasetFetcher")}[name]
    missing = [n for n in needs if not hasattr(module, n)]
    if missing:
        return "%s has no %s (pbench wrap was tested with torch %s)" % (
            name, ", ".join(missing), ", ".join(TESTED_TORCH))
    return None


def patch(name, module):
    if not STATE.active or getattr(module, "_pbench_patched", False):
        return
    why = check_internals(name, module)
    if why:
        LINK.turn_off(why)
        return
    try:
        PATCHES[name](module)
        module._pbench_patched = True
    except Exception as e:
        LINK.turn_off("patching %s failed: %s: %s" % (name, type(e).__name__, e))


class AfterImport:
    """A finder that patches a module of PATCHES once torch has loaded it,
    so that the hook costs nothing until the job imports torch itself."""

    def find_spec(self, name, path, target=None):
        if name not in PATCHES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module):
            run(module)
            patch(name, module)
        loader.exec_module = exec_module
        return spec


def die_with_relay():
    """The job's first process, started by the relay, gets SIGKILL when the
    relay ends (PR_SET_PDEATHSIG), so that no job outlives a pbench that
    was killed; its workers end with it, as torch's do."""
    if os.environ.get(RELAY_ENV) != str(os.getppid()):
        return
    try:
        import ctypes
        import signal
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def reset_after_fork():
    """In the child of a fork: another thread of the parent may have held
    the link's lock at the fork (it sends a batch while the loop starts a
    worker), and would never release it here; and the connection is the
    parent's. A lock and, on first use, a connection of the child's own."""
    LINK.lock = threading.Lock()
    LINK.pid = None
    sock, LINK.sock = LINK.sock, None
    if sock is not None:
        try:
            os.close(sock.detach())  # the child's copy: the parent's stays open
        except OSError:
            pass


def install():
    """Called once per process by sitecustomize."""
    die_with_relay()
    atexit.register(TAKEN.at_exit)
    os.register_at_fork(after_in_child=reset_after_fork)
    try:
        STATE.config = json.loads(os.environ.get(CONFIG_ENV) or "{}")
    except ValueError:
        STATE.config = {}
    ideal = STATE.config.get("ideal") or {}
    if ideal.get("count", 0) > 0:
        STATE.ideal = Ideal(int(ideal["count"]), int(ideal.get("warmup", 0)),
                            int(ideal.get("cap_bytes", 1 << 30)), ideal.get("site") or "")
    for name in PATCHES:
        if name in sys.modules:
            patch(name, sys.modules[name])
    sys.meta_path.insert(0, AfterImport())
    LINK.send(MSG_JSON, json.dumps({"type": "started", "pid": os.getpid()}).encode())
