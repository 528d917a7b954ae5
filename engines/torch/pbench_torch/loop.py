"""The training loop in the main process: one DataLoader per point, one
iter(loader) per repeat (and per epoch), a frame per batch.

Engine.serve answers pbench's commands (open, repeat, stop, close) until
close or the end of stdin, and returns the exit status."""
import gc
import os
import random
import signal
import time
import traceback

import torch
from torch.utils.data import DataLoader, Sampler

from . import ENGINE_NAME, PROTOCOL_VERSION
from .collate import Collate
from .dataset import (FOLDED_ROW, MAX_COLUMNS, IndexDataset, UserDataset,
                      describe_exception)
from .errors import ConfigError, sent
from .index import parse_shard, read_index, shard_indices
from .lifeline import EndWithEngine
from .stages import build_pipeline
from .userdata import add_python_path, import_callable, make_user_dataset
from .protocol import name_field, name_fields
from .versions import versions

EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2


class EpochOrder(Sampler):
    """The sampler: the order of the epoch about to start, set by the loop
    before iter(loader) (a permutation from the repeat's generator, as
    RandomSampler draws it, cut at what max_samples leaves)."""

    def __init__(self, count):
        self.count = count
        self.order = list(range(count))

    def __iter__(self):
        return iter(self.order)

    def __len__(self):
        return len(self.order)


def check_loader(loader):
    """ConfigError for loader options torch's DataLoader cannot honour."""
    if sent(loader, "in_order", "loader") is False:
        raise ConfigError("loader.in_order", "torch %s's DataLoader always returns batches in "
                          "order (it has no in_order); use in_order: true" % torch.__version__)
    affinity = sent(loader, "affinity", "loader")
    if affinity not in ("none", "", None):
        raise ConfigError("loader.affinity", "the torch engine does not pin its worker "
                          "processes; use affinity: none")
    if int(sent(loader, "batch_size", "loader")) < 1:
        raise ConfigError("loader.batch_size", "batch_size is at least 1")


class Engine:
    """One point's engine: the dataset and loader made at `open`, the
    repeats run on `repeat`."""

    def __init__(self, writer, reader):
        self.writer = writer
        self.reader = reader
        self.config = None
        self.dataset = None
        self.sampler = None
        self.loader = None
        self.closing = False

    # --- open ---------------------------------------------------------

    def open(self, command):
        """Builds the dataset and the DataLoader; sends ready."""
        if int(command.get("protocol", 0)) != PROTOCOL_VERSION:
            raise ConfigError("loader.engine", "pbench speaks engine protocol %s, this engine "
                              "%d" % (command.get("protocol"), PROTOCOL_VERSION))
        config = command.get("config") or {}
        self.config = config
        loader_config = sent(config, "loader", "")
        dataset_config = sent(config, "dataset", "")
        check_loader(loader_config)
        add_python_path(sent(loader_config, "python_path", "loader"),
                        name_field(command, "config_dir") or ".")
        dataset_path = name_field(command, "dataset_path")  # its bytes, where not UTF-8
        if dataset_path is not None:
            dataset_config = dict(dataset_config, path=dataset_path)
        try:
            rank, count = parse_shard(sent(dataset_config, "shard", "dataset"))
        except ValueError as e:
            raise ConfigError("dataset.shard", str(e))
        stages = build_pipeline(config, import_callable)
        if sent(dataset_config, "python", "dataset"):
            user = make_user_dataset(dataset_config)
            self.dataset = UserDataset(user, shard_indices(len(user), rank, count), stages)
            if self.dataset.folded:
                self.writer.json({"type": "warning", "message": (
                    "the Dataset's Compose has %d transforms: the last %d are timed together "
                    "as the row %s (pbench reads at most %d stage columns)"
                    % (len(self.dataset.original_transforms), self.dataset.folded,
                       FOLDED_ROW, MAX_COLUMNS))})
        else:
            if not stages:
                raise ConfigError("pipeline", "the pipeline is empty and dataset.python is not "
                                  "set: nothing to load")
            entries = read_index(name_field(command, "index"))
            for stage in stages:
                if hasattr(stage.fn, "check"):
                    stage.fn.check(entries)  # the bucket, credentials, TLS: at open
            self.dataset = IndexDataset(entries, shard_indices(len(entries), rank, count), stages)
        if len(self.dataset) == 0:
            raise ConfigError("dataset.shard", "shard %d/%d holds no samples" % (rank, count))
        self.stage_timing = bool(command.get("stage_timing", True))
        self.dataset.set_timing(self.stage_timing)
        self.sampler = EpochOrder(len(self.dataset))
        self.loader = self.make_loader()
        self.writer.json({"type": "ready", "protocol": PROTOCOL_VERSION, "engine": ENGINE_NAME,
                          "versions": versions(), "stages": self.dataset.columns(),
                          "counters": self.dataset.counters(), "samples": len(self.dataset)})

    def make_loader(self):
        """The DataLoader as a training script makes it from loader.*."""
        loader = self.config["loader"]
        workers = int(sent(loader, "workers", "loader"))
        extra = {}
        if workers > 0:
            extra["prefetch_factor"] = int(sent(loader, "prefetch_factor", "loader"))
            extra["persistent_workers"] = bool(sent(loader, "persistent_workers", "loader"))
            extra["worker_init_fn"] = EndWithEngine(os.getpid())
        return DataLoader(self.dataset, batch_size=int(sent(loader, "batch_size", "loader")),
                          sampler=self.sampler, num_workers=workers,
                          collate_fn=Collate(self.dataset.recorder,
                                             len(self.dataset.columns()) - 1),
                          pin_memory=bool(sent(loader, "pin_memory", "loader")),
                          drop_last=bool(sent(loader, "drop_last", "loader")), **extra)

    def set_stage_timing(self, enabled):
        """Timed or bare stages for the next repeat. Persistent workers
        keep their copy of the dataset, so the DataLoader is made again
        when the setting changes."""
        if enabled == self.stage_timing:
            return
        self.stage_timing = enabled
        self.dataset.set_timing(enabled)
        if getattr(self.loader, "_iterator", None) is not None:
            self.loader = self.make_loader()  # the old one's workers exit with it

    # --- repeat -------------------------------------------------------

    def epoch_order(self, generator, remaining):
        """This epoch's sample order: shuffled by the repeat's generator
        when dataset.shuffle, cut to remaining (max_samples) if set."""
        count = len(self.dataset)
        if sent(self.config["dataset"], "shuffle", "dataset"):
            order = torch.randperm(count, generator=generator).tolist()
        else:
            order = list(range(count))
        return order if remaining is None else order[:remaining]

    def send_workers(self, repeat, iterator, t_start_ns):
        pids = [w.pid for w in getattr(iterator, "_workers", [])]
        self.writer.json({"type": "workers", "repeat": repeat, "pids": pids,
                          "t_start_ns": t_start_ns})
        return pids

    def repeat(self, command):
        """Runs one repeat; returns False when the engine must exit
        (a fatal data error under on_error: fail)."""
        repeat = int(command.get("repeat", 0))
        self.set_stage_timing(bool(command.get("stage_timing", self.stage_timing)))
        dataset_config = self.config["dataset"]
        run = sent(self.config, "run", "")
        epochs = int(sent(dataset_config, "epochs", "dataset") or 0)
        max_samples = int(sent(dataset_config, "max_samples", "dataset") or 0)
        remaining = max_samples if max_samples > 0 else None
        seed = int(sent(dataset_config, "seed", "dataset")) + repeat
        generator = torch.Generator()
        generator.manual_seed(seed)
        # The transforms' randomness: the main process's (0 workers), and the
        # base seed the DataLoader draws for its workers' torch and random.
        torch.manual_seed(seed)
        random.seed(seed)
        step_s = float(sent(run, "step_ms", "run") or 0) / 1000.0
        fail_on_error = sent(run, "on_error", "run") == "fail"
        seq, epoch, pids, reason = 0, 0, None, "data_end"
        while (epochs == 0 or epoch < epochs) and (remaining is None or remaining > 0):
            self.sampler.order = self.epoch_order(generator, remaining)
            t_start_ns = time.monotonic_ns()
            iterator = iter(self.loader)
            new_pids = [w.pid for w in getattr(iterator, "_workers", [])]
            if pids is None or new_pids != pids:
                pids = self.send_workers(repeat, iterator, t_start_ns)
            try:
                delivered, stopped, failed = self.run_epoch(iterator, seq, step_s, fail_on_error)
            except Exception:
                endings = worker_endings(iterator)
                if not endings:
                    raise
                self.fatal("engine", "%s (%s; the engine's own process is alive)"
                           % (describe_exception(), endings), trace=traceback.format_exc())
                return False
            del iterator  # non-persistent workers exit here
            if failed:
                return False
            seq += delivered[0]
            if remaining is not None:
                remaining -= delivered[1]
            if stopped:
                reason = "stopped"
                break
            epoch += 1
            if delivered[0] == 0:
                break  # an epoch without a batch (drop_last): no more data
        self.writer.json({"type": "repeat_end", "repeat": repeat, "reason": reason})
        return True

    def run_epoch(self, iterator, seq, step_s, fail_on_error):
        """Streams one epoch's batches from seq on. Returns
        ((batches, samples), stopped, failed)."""
        batches = samples = 0
        while True:
            t_wait_ns = time.monotonic_ns()
            try:
                batch, count, records, errors, t_first, t_ready, nbytes, worker = next(iterator)
            except StopIteration:
                return (batches, samples), False, False
            t_taken_ns = time.monotonic_ns()
            step_ns = self.step(batch, step_s)
            t_done_ns = time.monotonic_ns()
            for index, file, message in errors:
                if fail_on_error:
                    self.writer.json({"type": "fatal", "kind": "data", "message":
                                      "%s: %s (run.on_error: fail)" % (file, message)})
                    return (batches, samples), True, True
                self.writer.json(dict({"type": "error", "index": index, "message": message},
                                      **name_fields("file", file)))
            self.write_batch(seq + batches, (t_wait_ns, t_taken_ns, t_done_ns, step_ns, t_first,
                                             t_ready, nbytes), count, len(errors), worker, records)
            batches += 1
            samples += count + len(errors)
            if self.stop_requested():
                return (batches, samples), True, False

    @staticmethod
    def step(batch, step_s):
        """The simulated training step: sleeps run.step_ms; its ns."""
        if step_s <= 0:
            return 0
        start = time.monotonic_ns()
        time.sleep(step_s)
        return time.monotonic_ns() - start

    def write_batch(self, seq, times, samples, errors, worker, records):
        """The batch frame: header, then the records' bytes."""
        columns = len(self.dataset.columns())
        counters = len(self.dataset.counters())
        rows = int(records.shape[0]) if records.dim() == 2 else 0
        if rows == 0:
            columns = counters = 0
        header = (seq,) + tuple(int(t) for t in times) + (samples, errors, int(worker), columns,
                                                          rows, counters)
        self.writer.batch(header, records.numpy().tobytes() if rows else b"")

    def stop_requested(self):
        """Polls stdin once: True on stop (or close / end of input)."""
        command = self.reader.poll()
        if command is None:
            return False
        kind = command_type(command)
        if kind == "close":
            self.closing = True
        return kind in ("stop", "close")

    # --- the command loop ---------------------------------------------

    def serve(self):
        """Answers commands until close; returns the exit status."""
        while not self.closing:
            command = self.reader.next_command()
            kind = command_type(command)
            try:
                if kind == "open":
                    self.open(command)
                elif kind == "repeat":
                    if self.loader is None:
                        return self.fatal("engine", "repeat before open")
                    if not self.repeat(command):
                        return EXIT_FAILED
                elif kind == "names":
                    self.names(command)
                elif kind == "release":
                    self.release()
                elif kind == "close":
                    break
                elif kind != "stop":  # a stop between repeats has nothing to end
                    return self.fatal("engine", "unknown command %r" % kind)
            except ConfigError as e:
                return self.fatal("config", e.message, e.option)
            except Exception:
                return self.fatal("engine", describe_exception(), trace=traceback.format_exc())
        return EXIT_OK

    def release(self):
        """pbench keeps this engine for its next point (docs/engines.md):
        the DataLoader, its workers and the Dataset go now; the next open
        makes new ones. No answer."""
        self.loader = self.sampler = self.dataset = None
        gc.collect()

    def names(self, command):
        """Answers names: the file of each sample asked for, from the
        Dataset itself ("" where it names none)."""
        found = []
        for index in command.get("indices") or []:
            file = self.dataset.file_of(int(index)) if self.dataset is not None else ""
            found.append(dict({"index": int(index)}, **name_fields("file", file)))
        self.writer.json({"type": "names", "names": found})

    def fatal(self, kind, message, option=None, trace=None):
        """Sends a fatal frame, with the whole traceback (trace) of an
        exception; returns the exit status to leave with."""
        frame = {"type": "fatal", "kind": kind, "message": message}
        if option is not None:
            frame["option"] = option
        if trace:
            frame["traceback"] = trace
        self.writer.json(frame)
        return EXIT_CONFIG if kind in ("config", "environment") else EXIT_FAILED


def worker_endings(iterator):
    """How the iterator's worker processes that died ended ("DataLoader
    worker 0 (pid 123) was killed by signal 11 (SIGSEGV)"), or ""."""
    said = []
    for number, worker in enumerate(getattr(iterator, "_workers", None) or []):
        code = worker.exitcode
        if code is None or code == 0:
            continue
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = "an unknown signal"
            said.append("DataLoader worker %d (pid %d) was killed by signal %d (%s)"
                        % (number, worker.pid, -code, name))
        else:
            said.append("DataLoader worker %d (pid %d) exited with status %d"
                        % (number, worker.pid, code))
    return "; ".join(said)


def command_type(command):
    """A command's name: its "type" field."""
    return command.get("type") if isinstance(command, dict) else None

