"""The relay between a wrapped training job and pbench (docs/wrap.md).

pbench starts it as the wrap engine (python3 -m pbench_wrap) and speaks the
engine protocol of docs/engines.md with it: `open` checks the command, each
`repeat` runs the job once, `stop` ends it. The job runs with pbench's hook
(pbench_wrap.hook) in each of its Python processes; each process connects
to the relay's socket (over TCP, with the run's token, from another
machine: pbench_wrap.nodes) and sends what it measures. The relay picks the
DataLoader measured, joins the loop's batches with the records of the
processes that built them, and writes them as the protocol's batch frames,
so that pbench's statistics, tables and verdict read the job as they read
an engine's loader.

A batch the loop took from worker W is the next batch W built: a worker
builds its batches in order and the loop takes each worker's in order.
Records older than the loader's latest epoch (a persistent worker's after
the job broke out of an epoch) are dropped."""
import collections
import json
import os
import re
import selectors
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

from pbench_torch.lifeline import end_with_pbench
from pbench_torch.protocol import CommandReader, FrameWriter

from . import hook, join, nodes
from .procs import (become_subreaper, command_of, command_reason, descendants,
                    process_reason, reap_orphans)
from .ranks import ranks_rows

RECORDS_FD = 3
TERMINAL_FD = 5        # pbench's stderr: where the job's output goes
TAIL_LINES = 20
STARTUP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "startup")
HEARTBEAT_S = 1.0
FIRST_BATCH_S = 120.0  # a job with no DataLoader batch by then is ended
KILL_WAIT_S = 3.0
LEFT_WAIT_S = 1.0      # what the job left after its first process ended may end by itself
IDEAL_CAP_BYTES = 1 << 30  # --ideal keeps at most this much of the job's batches
# The line a process that loaded the hook but never reached the relay
# writes (hook.Link.unreached): its pid, where it looked, its host, why.
UNREACHED = re.compile(r"pbench wrap: measuring is off in process (\d+): could not reach "
                       r"pbench's relay at (.*) on (\S+) \((.*)\)$")
ARG_TEXT = {"num_workers": "num_workers", "batch_size": "batch_size",
            "pin_memory": "pin_memory", "persistent_workers": "persistent_workers",
            "prefetch_factor": "prefetch_factor", "drop_last": "drop_last"}
SET_KEYS = {"workers": "workers", "batch_size": "batch_size", "pin_memory": "pin_memory",
            "persistent_workers": "persistent_workers", "prefetch_factor": "prefetch_factor",
            "drop_last": "drop_last"}


class Loader:
    """A DataLoader of the job, as its process described it."""

    def __init__(self, key, message):
        self.key = key
        self.host = None      # the machine of the process that made it
        self.local = True     # whether pbench can read its processes' /proc
        self.site = message.get("site", "?")
        self.dataset = message.get("dataset", "?")
        self.args = message.get("args") or {}
        self.changed = message.get("changed") or {}
        self.context = message.get("context")
        self.versions = message.get("versions") or {}
        self.batches = 0
        self.samples = 0
        self.wait_ns = 0
        self.epochs = 0
        self.first_t = 0
        self.last_t = 0
        self.iter_t = 0
        self.columns = None
        self.queues = collections.defaultdict(collections.deque)
        self.workers = {}     # worker id -> pid, of the latest epoch
        self.worker_t = {}    # worker id -> when it started (its worker_init_fn)
        self.pending = None   # the loop's latest batch, waiting for its end
        self.taken = []       # (t_wait, t_taken, samples) per batch, for the ranks' rows
        self.per_worker = {}  # worker -> [pid, batches, samples, cpu_ns, busy_ns], measured
        self.fetched_by = {}  # worker -> pid of the process whose connection sent its batches
        self.started = {}     # worker -> (start, ready, cpu) of a worker process not yet counted
        self.built = []       # (worker, samples, busy_ns, columns, records, rows), measured

    def describe(self, measured, rank=None):
        span = (self.last_t - self.first_t) / 1e9 if self.last_t > self.first_t else 0.0
        return {"site": self.site, "dataset": self.dataset, "pid": self.key[0],
                "args": self.args, "changed": self.changed, "context": self.context,
                "batches": self.batches, "samples": self.samples, "epochs": self.epochs,
                "stall_pct": round(100.0 * self.wait_ns / (span * 1e9), 2) if span else None,
                "measured": measured, "rank": rank}


class Job:
    """One run of the job (a repeat): its process, its output's tail, its
    connections and what they said."""

    def __init__(self, relay, repeat, stage_timing):
        self.relay = relay
        self.repeat = repeat
        self.stage_timing = stage_timing
        self.proc = None
        self.started_ns = time.monotonic_ns()
        self.tail = collections.deque(maxlen=TAIL_LINES)
        self.partial = b""
        self.output_open = True
        self.conns = {}          # socket -> [buffer, pid, nodes.Peer or None (Unix)]
        self.refused = {}        # why -> connections the relay dropped for it
        self.pids = nodes.Pids(getattr(relay, "here", None))
        self.pythons = {}        # pid -> hello
        self.loaders = {}
        self.measured = None
        self.seq = 0             # batch frames sent for the measured loader
        self.window = [0, 0]     # the measured batches' first wait and last end
        # the nodes that joined with their own pbench (pbench wrap --join)
        self.joined = join.Joined(getattr(relay, "here", None), *join.expected_nodes(
            getattr(relay, "argv", None) or [], os.environ))
        self.workers_sent = None
        self.stages_sent = False
        self.ending = None       # how pbench ended it, once it does
        self.done = False        # repeat_end or fatal sent
        self.status = None
        self.selector = None
        self.unshown = 0         # lines the job wrote after pbench ended it
        self.failed_next = None  # (loader, message): the first next() that raised
        self.unreached = {}      # pid -> (path, host, why): hooked, but never connected
        self.hookless = {}       # pid (0: the command line) -> why its Python has no hook
        self.exited_t = None     # when its first process was seen to have ended
        self.left = []           # "pid (command)" of what it left running, ended by pbench
        self.scanned = 0.0       # when the job's processes were last looked at

    # -- the process ---------------------------------------------------------

    def start(self, argv, env):
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     close_fds=True)
        os.set_blocking(self.proc.stdout.fileno(), False)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def read_output(self):
        try:
            chunk = os.read(self.proc.stdout.fileno(), 65536)
        except BlockingIOError:
            return
        if not chunk:
            self.output_open = False
            if self.partial:
                self.tail.append(self.partial.replace(b"\0", b"").decode("utf-8", "replace"))
                self.partial = b""
            return
        if self.ending is None:  # after pbench ended it: its last words stay in the result
            try:
                os.write(TERMINAL_FD, chunk)
            except OSError:
                pass
        else:
            self.unshown += chunk.count(b"\n")
        lines = (self.partial + chunk).split(b"\n")
        self.partial = lines.pop()[-4096:]
        for line in lines:  # no NUL (torch's crashed worker writes one): pbench's JSON has none
            text = line.replace(b"\0", b"").decode("utf-8", "replace")
            self.tail.append(text[:500])
            unreached = UNREACHED.search(text.rstrip("\r"))
            if unreached:
                self.unreached[int(unreached.group(1))] = unreached.groups()[1:]

    def exit_text(self):
        code = self.proc.returncode if self.proc else None
        if code is None:
            return "is still running"
        if code < 0:
            try:
                return "was killed by %s" % signal.Signals(-code).name
            except ValueError:
                return "was killed by signal %d" % -code
        return "exited with status %d" % code

    # -- what the processes send --------------------------------------------

    def on_json(self, conn, message):
        kind = message.get("type")
        key = tuple(message["loader"]) if "loader" in message else None
        if kind == "hello" and message.get("role") == "node" and conn[2] is not None:
            self.joined.hello(conn, message)  # pbench wrap --join on another node
        elif kind == "join" and conn[2] is not None:
            self.joined.join(conn)
        elif kind == "node_end" and conn[2] is not None:
            self.joined.ended(conn, message)
        elif kind == "hello":
            conn[1] = message.get("pid")
            message.setdefault("host", self.relay.here)
            self.pythons[message.get("pid")] = message
        elif kind == "loader":
            loader = self.loaders[key] = Loader(key, message)
            loader.host = conn[2].host if conn[2] is not None else self.relay.here
            loader.local = conn[2] is None or conn[2].space is None
            self.say_changed(loader)
            wanted = self.relay.loader_site
            if self.measured is None and wanted and loader.site.endswith(wanted):
                self.measured = key
        elif kind == "iter" and key in self.loaders:
            loader = self.loaders[key]
            self.flush(loader, message["t"])
            loader.iter_t = message["t"]
            loader.epochs += 1
            # The workers of earlier epochs; a new one may have said so first
            for w, ready in list(loader.worker_t.items()):
                if ready < loader.iter_t:
                    loader.workers.pop(w, None)
                    loader.worker_t.pop(w, None)
            if key == self.measured:
                self.send_workers(loader)
        elif kind == "epoch_end" and key in self.loaders:
            self.flush(self.loaders[key], message["t"])
        elif kind == "next_failed" and key in self.loaders:
            # The step before ended when next() was called; the wait that
            # ended in an error (a crashed worker) is no batch's and ends
            # the window: said in a warning, never booked as step.
            loader = self.loaders[key]
            self.flush(loader, message["t_wait"])
            if self.failed_next is None:
                self.failed_next = (loader, message)
        elif kind == "worker" and key in self.loaders:
            loader = self.loaders[key]
            loader.workers[message.get("worker")] = message.get("pid")
            loader.worker_t[message.get("worker")] = message.get("ready_ns") or 0
            loader.started[message.get("worker")] = (message.get("start_ns") or 0,
                                                     message.get("ready_ns") or 0,
                                                     message.get("cpu_ns") or 0)
            if key == self.measured:
                self.send_workers(loader)
        elif kind == "ideal" and conn[1] == (self.measured or (None,))[0]:
            self.relay.writer.json({"type": "warning", "message": (
                "ideal loader: %d batches (%.1f MiB) the job received after the warm-up were "
                "kept and handed to it again%s; a step whose time depends on the data, or that "
                "changes its batch in place, differs from the job's own"
                % (message.get("kept", 0), message.get("bytes", 0) / 1048576.0,
                   "" if not message.get("short") else ", fewer than the %d asked for: %s"
                   % (message.get("asked", 0), message.get("short"))))})
        elif kind == "columns" and key in self.loaders:
            loader = self.loaders[key]
            if loader.columns is None:
                loader.columns = list(message.get("names") or [])
            if key == self.measured:
                self.send_stages(loader)

    def on_batch(self, payload):
        pid, number, worker, t_wait, t_taken, samples = hook.BATCH.unpack_from(payload)
        loader = self.loaders.get((pid, number))
        if loader is None:
            return
        loader.batches += 1
        loader.wait_ns += t_taken - t_wait
        if len(loader.taken) < 200000:
            loader.taken.append([t_wait, t_taken, samples])
        loader.first_t = loader.first_t or t_wait
        loader.last_t = t_taken
        if self.measured is None and not self.relay.loader_site and self.rank_zero(pid):
            self.measured = loader.key
        if loader.key != self.measured:
            loader.samples += samples
            return
        self.send_stages(loader)
        self.send_workers(loader)
        self.flush(loader, t_wait)
        loader.pending = (worker, t_wait, t_taken, samples)

    def on_fetch(self, payload, sender=None):
        fields = hook.FETCH.unpack_from(payload)
        pid, number, worker = fields[0], fields[1], fields[2]
        loader = self.loaders.get((pid, number))
        if loader is not None and worker >= 0 and sender and sender != pid:
            # The worker process that built it, from its own connection: its
            # start message may have come before this loader was known (a
            # persistent worker), and its row names it all the same.
            loader.fetched_by[worker] = sender
        if loader is not None:
            loader.queues[worker].append((fields, payload[hook.FETCH.size:]))

    def node_pid(self, host, pid):
        return self.pids.of(host, pid)

    def refuse(self, why):
        self.refused[why] = self.refused.get(why, 0) + 1

    def rank_zero(self, pid):
        rank = (self.pythons.get(pid) or {}).get("rank")
        return rank is None or rank.get("rank") == 0

    # -- frames to pbench -----------------------------------------------------

    def send_stages(self, loader):
        if self.stages_sent or not loader.columns or not self.stage_timing:
            return
        self.stages_sent = True
        self.relay.writer.json({"type": "stages", "counters": [],
                                "stages": [{"name": n, "parent": ""} for n in loader.columns]})

    def send_workers(self, loader):
        pids = [loader.workers[w] for w in sorted(loader.workers)]
        state = (loader.key, tuple(pids))
        if state == self.workers_sent:
            return
        self.workers_sent = state
        here = loader.local  # pbench reads /proc of its own machine only
        self.relay.writer.json({"type": "workers", "repeat": self.repeat,
                                "pids": pids if here else [],
                                "t_start_ns": loader.iter_t or self.started_ns,
                                "main_pid": loader.key[0] if here else 0})

    def take_fetch(self, loader, worker):
        """The record of the batch the loop took from worker (-1: whichever
        was built first), records of earlier epochs dropped; none for a
        batch --ideal handed out again (-2)."""
        if worker == -2:
            return None
        queues = [worker] if worker in loader.queues else list(loader.queues)
        best = None
        for w in queues:
            queue = loader.queues[w]
            while queue and queue[0][0][6] and queue[0][0][6] < loader.iter_t:
                queue.popleft()
            if queue and (best is None or queue[0][0][7] < loader.queues[best][0][0][7]):
                best = w
        return loader.queues[best].popleft() if best is not None else None

    def flush(self, loader, t_done):
        """The loop's latest batch of loader, ended at t_done (the next
        next(), the epoch's end): a batch frame when it is the one measured."""
        if loader.pending is None:
            return
        worker, t_wait, t_taken, samples = loader.pending
        loader.pending = None
        fetch = self.take_fetch(loader, worker)
        columns = records = 0
        body = b""
        t_first = t_ready = t_taken
        if fetch is not None:
            fields, rows = fetch
            _, _, _, fetched, width, count, t_first, t_ready = fields
            samples = fetched
            if loader.taken and loader.taken[-1][0] == t_wait:
                loader.taken[-1][2] = fetched  # collate's count, not the loop's guess
            if self.seq >= self.relay.lead() and not self.ending:
                self.count_worker(loader, worker if worker >= 0 else fields[2], fetched,
                                  width, count, rows, t_ready - t_first)
            if (self.stages_sent and loader.columns and width == len(loader.columns) and
                    count == fetched and len(rows) == 8 * count * (1 + 3 * width)):
                columns, records, body = width, count, self.with_start(loader, fields[2], rows)
        loader.samples += samples
        if self.ending or self.done or t_done < t_taken:
            return
        # --ideal keeps K batches after the warm-up before it hands them out
        # again: those are warm-up too (pbench counts seq < warmup as such).
        warmup, lead = self.relay.warmup, self.relay.lead()
        seq = self.seq if self.seq < warmup else \
            max(0, warmup - 1) if self.seq < lead else self.seq - (lead - warmup)
        header = (seq, t_wait, t_taken, t_done, t_done - t_taken, t_first or t_taken,
                  t_ready or t_taken, 0, samples, 0, worker, columns, records, 0)
        self.relay.writer.batch(header, body)
        if self.seq == lead:
            self.window[0] = t_wait
        if self.seq >= lead:
            self.window[1] = t_done
        self.seq += 1
        limit = self.relay.batches
        if limit and self.seq >= lead + limit and not self.ending:
            self.relay.finish(self, "stopped by pbench after %d measured batches" % limit,
                              "data_end")

    def with_start(self, loader, worker, rows):
        """rows with the worker's start-up in the worker_start column of the
        first record, for the first batch of a worker process."""
        start = loader.started.pop(worker, None)
        if start is None or loader.columns[-1] != "worker_start" or not start[1]:
            return rows
        values = memoryview(bytearray(rows)).cast("Q")
        base = 1 + 3 * (len(loader.columns) - 1)
        values[base] = start[0] or start[1]
        values[base + 1] = start[1]
        values[base + 2] = start[2]
        return values.tobytes()

    def count_worker(self, loader, worker, samples, width, count, rows, busy_ns):
        """A measured batch into its worker's row: batches, samples, the
        thread CPU of its samples' columns and the time it spent on it."""
        cpu = 0
        if width and count and len(rows) == 8 * count * (1 + 3 * width):
            values = memoryview(rows).cast("Q")
            stride = 1 + 3 * width
            for r in range(count):
                for column in range(width):
                    cpu += values[r * stride + 3 + 3 * column]
        pid = loader.workers.get(worker) or loader.fetched_by.get(worker)
        row = loader.per_worker.setdefault(worker, [pid, 0, 0, 0, 0])
        row[0] = pid or row[0]
        row[1] += 1
        row[2] += samples
        row[3] += cpu
        row[4] += max(0, busy_ns)
        if len(loader.built) < 200000:  # its rank's row reads the columns (ranks_rows)
            loader.built.append((worker, samples, busy_ns, width, count, rows))

    def workers_rows(self):
        """The measured loader's worker processes over the measured batches."""
        loader = self.loaders.get(self.measured)
        wall = self.window[1] - self.window[0]
        if loader is None or wall <= 0:
            return []
        # The raw measurements: pbench divides them (its one definition of
        # CPU per sample). No CPU where its samples were not timed
        # (--overhead's paired run, per-sample timing off): none measured is
        # not zero.
        return [{"worker": w, "pid": pid, "batches": b, "samples": n,
                 "cpu_ns": cpu if cpu else None,
                 "busy_pct": round(100.0 * busy / wall, 1)}
                for w, (pid, b, n, cpu, busy) in sorted(loader.per_worker.items())]

    def ranks_rows(self):
        """Each rank's row over the measured window (ranks.ranks_rows)."""
        return ranks_rows(self)

    def say_changed(self, loader):
        if not loader.changed:
            return
        said = ", ".join("%s %s in the script, %s under pbench" % (ARG_TEXT.get(k, k), a, b)
                         for k, (a, b) in sorted(loader.changed.items()))
        self.relay.writer.json({"type": "warning", "message": "%s (%s, %s)"
                                % (said, loader.site, loader.dataset.rsplit(".", 1)[-1])})

    def account(self):
        """The job frame: how it ended, its last lines, its DataLoaders."""
        ranks = sorted({json.dumps(h.get("rank"), sort_keys=True)
                        for h in self.pythons.values() if h.get("rank")})
        versions = {}
        for loader in self.loaders.values():
            versions.update(loader.versions)
        return {"type": "job", "repeat": self.repeat, "command": self.relay.command,
                "ended": self.ending or ("the job %s by itself" % self.exit_text()),
                "exit": self.exit_text(), "status": self.proc.returncode if self.proc else None,
                "lines_after_the_end": self.unshown,
                "output_tail": list(self.tail),
                "loaders": [l.describe(l.key == self.measured,
                                       ((self.pythons.get(l.key[0]) or {}).get("rank") or {})
                                       .get("rank"))
                            for l in self.loaders.values()],
                "ranks": [json.loads(r) for r in ranks], "pythons": len(self.pythons),
                "workers": self.workers_rows(), "rank_rows": self.ranks_rows(),
                "versions": versions, "refused": sum(self.refused.values()),
                "nodes": nodes.nodes_rows(self.pythons, self.relay.here, self.relay.clocks),
                "joined": self.joined.account(self.window),
                "nodes_expected": self.joined.expected}

    def unreached_text(self):
        return nodes.unreached_text(self.unreached, self.relay)

    def warn_other_loaders(self):
        measured = self.loaders.get(self.measured)
        if measured is None:
            return
        for loader in self.loaders.values():
            if loader is not measured and loader.key[0] == measured.key[0] and \
                    loader.batches > measured.batches:  # another rank's is in its row
                self.relay.writer.json({"type": "warning", "message": (
                    "%s (%s) delivered %d batches, more than the measured %s (%d): "
                    "pbench wrap --loader %s measures it"
                    % (loader.site, loader.dataset.rsplit(".", 1)[-1], loader.batches,
                       measured.site, measured.batches, os.path.basename(loader.site)))})


class Relay:
    """The engine's side of the protocol, one job per repeat."""

    def __init__(self, writer, reader):
        self.writer = writer
        self.reader = reader
        self.command = ""
        self.argv = []
        self.loader_site = ""
        self.batches = 0
        self.warmup = 0
        self.until_exit = False
        self.grace_s = 10.0
        self.overrides = {}
        self.ideal = {}
        self.stage_timeout_s = 0.0
        self.max_time_s = 60.0
        self.folder = tempfile.mkdtemp(prefix="pbench-wrap-")
        self.socket_path = os.path.join(self.folder, "records")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.socket_path)
        self.listener.listen(256)
        self.listener.setblocking(False)
        self.here = socket.gethostname()
        self.tcp = None       # nodes.Listener, for ranks on other machines
        self.clocks = {}      # host -> [offset applied, residual, offset measured] (ns)

    def lead(self):
        """Batches before the measured part: the warm-up, and those --ideal keeps."""
        return self.warmup + int(self.ideal.get("count") or 0)

    def fatal(self, kind, message, option=None):
        frame = {"type": "fatal", "kind": kind, "message": message}
        if option:
            frame["option"] = option
        self.writer.json(frame)

    def open(self, command):
        config = command.get("config") or {}
        wrap = config.get("wrap") or {}
        loader = config.get("loader") or {}
        run = config.get("run") or {}
        self.command = str(wrap.get("command") or "")
        try:
            self.argv = shlex.split(self.command)
        except ValueError as e:
            self.fatal("config", "wrap.command %r cannot be split as a shell would: %s"
                       % (self.command, e), "wrap.command")
            return False
        if not self.argv:
            self.fatal("config", "wrap.command is empty: name the training job "
                       "(pbench wrap -- python3 train.py)", "wrap.command")
            return False
        program = self.argv[0]
        if shutil.which(program) is None:
            self.fatal("config", "wrap.command: %r is not %s" % (
                program, "an executable file" if "/" in program else "a program on PATH"),
                "wrap.command")
            return False
        self.loader_site = str(wrap.get("loader") or "")
        self.batches = int(wrap.get("batches") or 0)
        self.until_exit = bool(wrap.get("until_exit"))
        self.grace_s = float(wrap.get("grace_s", 10))
        self.warmup = int(run.get("warmup_batches") or 0)
        self.stage_timeout_s = float(run.get("stage_timeout_s") or 0)
        self.max_time_s = float(run.get("max_time_s") or 60)
        names = [n for n in str(wrap.get("set") or "").split(",") if n]
        unknown = [n for n in names if n not in SET_KEYS]
        if unknown:
            self.fatal("config", "wrap.set names %s; pbench gives the job's DataLoader only %s"
                       % (", ".join(unknown), ", ".join(SET_KEYS)), "wrap.set")
            return False
        self.overrides = {SET_KEYS[n]: loader.get(n) for n in names}
        self.ideal = {"count": int(wrap.get("ideal") or 0), "warmup": self.warmup,
                      "cap_bytes": IDEAL_CAP_BYTES, "site": self.loader_site}
        if not self.listen(str(wrap.get("listen") or "")):
            return False
        self.writer.json({"type": "ready", "protocol": 1, "engine": "wrap",
                          "versions": {"python": sys.version.split()[0]},
                          "stages": [{"name": "getitem", "parent": ""},
                                     {"name": "collate", "parent": ""}],
                          "counters": [], "samples": 0})
        return True

    def listen(self, text):
        """The TCP address ranks on other machines send to, one for the
        session (nodes.open_listener says which); False after a fatal."""
        if self.tcp is not None:
            return True
        try:
            self.tcp, said = nodes.open_listener(text, self.argv, os.environ)
        except nodes.Refused as e:
            self.fatal("config", "wrap.listen: %s" % e, "wrap.listen")
            return False
        try:
            os.write(TERMINAL_FD, said.encode())
        except OSError:
            pass
        return True

    def environment(self, stage_timing):
        env = dict(os.environ)
        for name in ("PBENCH_ENGINE_PROTOCOL", "PBENCH_CALLER_PYTHONPATH"):
            env.pop(name, None)
        startup = STARTUP
        caller = os.environ.get("PBENCH_CALLER_PYTHONPATH")
        env["PYTHONPATH"] = startup + (":" + caller if caller else "")
        env[hook.SOCKET_ENV] = self.socket_path
        if self.tcp is not None:
            env[nodes.ADDR_ENV] = self.tcp.address
            env[nodes.TOKEN_ENV] = self.tcp.token
            env[nodes.HOST_ENV] = self.here
        env[hook.RELAY_ENV] = str(os.getpid())
        self.hook_config = {"stage_timing": stage_timing, "overrides": self.overrides,
                            "ideal": self.ideal}
        env[hook.CONFIG_ENV] = json.dumps(self.hook_config)
        return env

    def repeat(self, command):
        job = Job(self, int(command.get("repeat", 0)), bool(command.get("stage_timing", True)))
        try:
            job.start(self.argv, self.environment(job.stage_timing))
        except OSError as e:
            self.fatal("config", "wrap.command: %s cannot be started: %s" % (self.argv[0], e),
                       "wrap.command")
            return False
        reason = command_reason(self.argv, STARTUP)
        if reason:
            job.hookless[0] = reason
        job.joined.welcome = {"config": self.hook_config, "grace_s": self.grace_s}
        selector = job.selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ, "listen")
        if self.tcp is not None:
            selector.register(self.tcp.sock, selectors.EVENT_READ, "listen-tcp")
        selector.register(job.proc.stdout, selectors.EVENT_READ, "output")
        beat = time.monotonic()
        try:
            while not job.done:
                self.pump(job, selector, 0.05)
                if time.monotonic() - beat > HEARTBEAT_S and job.alive():
                    self.writer.json({"type": "alive"})
                    beat = time.monotonic()
                    reap_orphans(job.proc.pid)
                    self.drop_silent(job, selector)
                command = self.reader.poll()
                if command is not None and command.get("type") in ("stop", "close"):
                    self.finish(job, "stopped by pbench with SIGINT", "stopped")
                    if command.get("type") == "close":
                        return False
                if job.done:
                    break
                if not job.alive() and self.ended_with_what_it_left(job):
                    self.job_ended(job)
                elif not job.pythons and self.look_for_hookless(job):
                    self.finish(job, "ended by pbench at the window (%.0f s): its Python "
                                "cannot load pbench's hook" % self.window_s(), None,
                                grace_s=0)  # nothing of it is measured: no grace to wait
                elif (job.measured is None and not self.until_exit and
                      time.monotonic_ns() - job.started_ns > self.first_batch_s() * 1e9):
                    self.finish(job, "ended by pbench: no DataLoader batch within %.0f s"
                                % self.first_batch_s(), None)
        finally:
            self.end_processes(job)
            for conn in list(job.conns):
                conn.close()
            selector.close()
        return True

    def ended_with_what_it_left(self, job):
        """Whether the job, whose first process has exited, is over: its
        output closed and nothing of it left running; or, LEFT_WAIT_S
        after, what it left (which would hold --until-exit open for as
        long as it runs) ended by pbench."""
        if job.exited_t is None:
            job.exited_t = time.monotonic()
        if not job.output_open and not descendants(os.getpid(), live=True):
            return True
        if time.monotonic() - job.exited_t < LEFT_WAIT_S:
            return False
        self.end_leftovers(job)
        while job.output_open:  # what no longer runs holds no pipe
            self.drain(job, 0.05)
            if time.monotonic() - job.exited_t > LEFT_WAIT_S + 3 * KILL_WAIT_S:
                break
        return True

    def window_s(self):
        return min(self.max_time_s, self.first_batch_s())

    def look_for_hookless(self, job):
        """Python processes of the job that cannot load the hook (a flag, a
        reset environment), looked for each half second until one loads
        it; whether the window (--time) is over with one seen."""
        now = time.monotonic()
        if now - job.scanned >= 0.5:
            job.scanned = now
            for pid in [job.proc.pid] + descendants(job.proc.pid):
                if pid not in job.hookless:
                    reason = process_reason(pid, STARTUP)
                    if reason:
                        job.hookless[pid] = reason
        return bool(job.hookless) and \
            time.monotonic_ns() - job.started_ns > self.window_s() * 1e9

    def first_batch_s(self):
        return max(FIRST_BATCH_S, self.stage_timeout_s)

    def pump(self, job, selector, timeout):
        """Reads what is ready: new connections, records, the job's output."""
        for item, _ in selector.select(timeout):
            if item.data == "listen":
                try:
                    conn, _ = self.listener.accept()
                except BlockingIOError:
                    continue
                conn.setblocking(False)
                job.conns[conn] = [bytearray(), None, None]
                selector.register(conn, selectors.EVENT_READ, "conn")
            elif item.data == "listen-tcp":
                try:
                    conn, where = self.tcp.accept()
                except OSError:
                    continue
                job.conns[conn] = [bytearray(), None, nodes.Peer(
                    conn, where, self.tcp.token, self.clocks, self.here)]
                selector.register(conn, selectors.EVENT_READ, "conn")
            elif item.data == "output":
                job.read_output()
                if not job.output_open:
                    selector.unregister(job.proc.stdout)
            else:
                self.read_conn(job, item.fileobj, selector)

    def read_conn(self, job, conn, selector):
        state = job.conns[conn]
        try:
            chunk = conn.recv(1 << 20)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            if state[2] is not None and state[2].host is None:
                job.refuse("closed before a hello")
            self.drop(job, conn, selector)
            return
        buf = state[0]
        buf += chunk
        offset = 0
        try:
            while len(buf) - offset >= 8:
                length, kind = hook.HEAD.unpack_from(buf, offset)
                if length < 4 or length > nodes.MAX_FRAME:
                    raise nodes.Refused("a frame %d bytes long" % length)
                if len(buf) - offset < 4 + length:
                    break
                payload = bytes(buf[offset + 8:offset + 4 + length])
                offset += 4 + length
                self.on_frame(job, state, kind, payload)
        except (nodes.Refused, ValueError, TypeError, KeyError, struct.error) as e:
            # A TCP connection that breaks the rules is dropped and counted;
            # the run goes on with what the others send.
            if state[2] is None:
                raise
            job.refuse(str(e) if isinstance(e, nodes.Refused) else "a malformed frame")
            self.drop(job, conn, selector)
            return
        del buf[:offset]

    def on_frame(self, job, state, kind, payload):
        if state[2] is not None:  # TCP: the token first, then the node's ids and clock
            payload = state[2].admit(kind, payload, job)
            if payload is None:
                return
        if kind == hook.MSG_JSON:
            job.on_json(state, payload if isinstance(payload, dict) else json.loads(payload))
        elif kind == hook.MSG_BATCH:
            job.on_batch(payload)
        elif kind == hook.MSG_FETCH:
            job.on_fetch(payload, state[1])

    def drop(self, job, conn, selector):
        job.joined.gone(conn)
        if conn in job.conns:
            selector.unregister(conn)
        conn.close()
        job.conns.pop(conn, None)

    def drop_silent(self, job, selector):
        """TCP connections that sent no hello in nodes.HELLO_S: refused."""
        for conn, state in list(job.conns.items()):
            if state[2] is not None and state[2].late():
                job.refuse("no hello within %.0f s" % nodes.HELLO_S)
                self.drop(job, conn, selector)

    def finish(self, job, how, reason, grace_s=None):
        """Ends the job as a job runner would, then tells pbench: the job's
        account and repeat_end (reason), or a fatal when nothing came."""
        if job.done:
            return
        job.ending = how
        job.joined.stop()  # the nodes end theirs while the head ends its own
        self.end_processes(job, grace_s)
        job.joined.wait(lambda t: self.drain(job, t), self.grace_s + 2 * KILL_WAIT_S + 1)
        self.report(job, reason)

    def job_ended(self, job):
        """The job ended by itself."""
        for loader in job.loaders.values():
            self.flush_last(job, loader)
        job.joined.end(lambda t: self.drain(job, t), self.grace_s)
        self.report(job, "data_end")

    def flush_last(self, job, loader):
        if loader.pending is not None:
            job.flush(loader, loader.last_t if loader.last_t > loader.pending[2]
                      else time.monotonic_ns())

    def report(self, job, reason):
        job.done = True
        tail = "\n".join(job.tail) or "(no output)"
        ran = "'%s' %s" % (self.command, job.exit_text())
        if job.seq == 0:
            if not job.pythons and job.unreached:
                self.fatal("environment", "%s: %s. Its last lines:\n%s"
                           % (ran, job.unreached_text(), tail))
            elif not job.pythons:
                why = "; ".join(job.hookless[p] for p in sorted(job.hookless)[:3])
                self.fatal("environment", "%s and started no Python process with pbench's hook: "
                           "%s. Its last lines:\n%s"
                           % (ran, why + " (run it without, or set it back)" if why else
                              "pbench wrap measures Python training jobs that use torch's "
                              "DataLoader", tail))
            elif "No module named 'torch'" in tail:
                self.fatal("environment", "%s: its Python has no torch (install Debian's "
                           "python3-torch, or run the job with an interpreter that has it). "
                           "Its last lines:\n%s" % (ran, tail))
            elif not job.loaders:
                self.fatal("engine", "%s without creating a torch DataLoader%s (Python "
                           "processes seen: %d, the first ran %s). Its last lines:\n%s"
                           % (ran, " within the window" if job.ending else "",
                              len(job.pythons), " ".join(list(job.pythons.values())[0]
                                                         .get("argv") or ["?"]), tail))
            else:
                self.fatal("engine", "%s before the measured DataLoader's first batch "
                           "(DataLoaders made: %s). Its last lines:\n%s"
                           % (ran, ", ".join(l.site for l in job.loaders.values()), tail))
            return
        if job.left:
            self.writer.json({"type": "warning", "message": (
                "the job left %s running after %s; pbench ended %s" % (
                    ", ".join(job.left), "its first process ended" if job.ending is None else
                    "pbench ended it", "it" if len(job.left) == 1 else "them"))})
        if job.unreached:
            self.writer.json({"type": "warning", "message": job.unreached_text()})
        if job.refused:
            self.writer.json({"type": "warning", "message": nodes.refused_text(job.refused)})
        for said in job.joined.warnings(job.window, {h.get("host") or self.here
                                                      for h in job.pythons.values()}):
            self.writer.json({"type": "warning", "message": said})
        if job.failed_next is not None:
            loader, failed = job.failed_next
            self.writer.json({"type": "warning", "message": (
                "the job's DataLoader (%s) failed after %d batches, in a next() that waited "
                "%.2f s for a batch that never came: %s; that wait ends the window (it is no "
                "batch's step)" % (loader.site, loader.batches, (failed["t"] - failed["t_wait"])
                                   / 1e9, failed.get("error") or "?"))})
        if job.ending is None and job.proc.returncode not in (0, None):
            self.writer.json({"type": "warning", "message": "%s after %d batches: the job "
                              "failed; its last lines: %s"
                              % (ran, job.seq, " | ".join(list(job.tail)[-3:]))})
        job.warn_other_loaders()
        self.writer.json(job.account())
        self.writer.json({"type": "repeat_end", "repeat": job.repeat,
                          "reason": reason or "stopped"})

    def end_processes(self, job, grace_s=None):
        """SIGINT to the job, SIGTERM to all its processes after grace_s
        (--grace, unless told), SIGKILL after KILL_WAIT_S more; its output
        is read meanwhile."""
        if job.proc is None:
            return
        grace_s = self.grace_s if grace_s is None else grace_s
        steps = ((signal.SIGINT, [job.proc.pid], grace_s),
                 (signal.SIGTERM, None, KILL_WAIT_S), (signal.SIGKILL, None, KILL_WAIT_S))
        for sig, pids, wait_s in steps:
            if job.proc.poll() is not None:
                break
            # All below the relay: the job's tree and what it left (a subreaper's)
            targets = pids or [job.proc.pid] + descendants(os.getpid(), live=True)
            for pid in targets:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
            if sig != signal.SIGINT and job.ending and "SIG" not in job.ending.split("(")[-1]:
                job.ending += ", then %s" % sig.name
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline and job.proc.poll() is None:
                self.drain(job, 0.05)
            if job.proc.poll() is not None:
                break
        self.end_leftovers(job, LEFT_WAIT_S)
        self.drain(job, 0)

    def left_running(self, job):
        reap_orphans(job.proc.pid)
        return [pid for pid in descendants(os.getpid(), live=True) if pid != job.proc.pid]

    def end_leftovers(self, job, wait_s=0.0):
        """What the job left running once its first process has ended (a
        helper in its session, a double-forked daemon: the relay's now, a
        subreaper's), given wait_s to end by itself (workers on their way
        out): named in job.left, then SIGTERM and, KILL_WAIT_S later,
        SIGKILL; its output is read meanwhile."""
        deadline = time.monotonic() + wait_s
        left = self.left_running(job)
        while left and time.monotonic() < deadline:
            self.drain(job, 0.05)
            left = self.left_running(job)
        if not left:
            return
        job.left += ["%d (%s)" % (pid, command_of(pid)) for pid in left][:8 - len(job.left)]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in left:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
            deadline = time.monotonic() + KILL_WAIT_S
            while left and time.monotonic() < deadline:
                self.drain(job, 0.05)
                left = self.left_running(job)
            if not left:
                break

    def drain(self, job, timeout):
        """The job's output and records while it is being ended (a process
        blocked writing either would not end)."""
        if job.selector is not None:
            try:
                self.pump(job, job.selector, timeout)
                return
            except (OSError, ValueError, KeyError):
                pass
        if job.output_open:
            try:
                job.read_output()
            except (OSError, ValueError):
                job.output_open = False
        time.sleep(timeout)

    def serve(self):
        try:
            while True:
                command = self.reader.next_command()
                kind = command.get("type")
                if kind == "open":
                    if not self.open(command):
                        return 2
                elif kind == "repeat":
                    if not self.repeat(command):
                        return 0
                elif kind == "names":
                    self.writer.json({"type": "names", "names": []})
                elif kind == "release":  # kept for the next point: the job is over already
                    pass
                elif kind == "close":
                    return 0
        finally:
            self.listener.close()
            if self.tcp is not None:
                self.tcp.close()
            shutil.rmtree(self.folder, ignore_errors=True)


def ended(signum, frame):
    raise SystemExit(128 + signum)  # the job is ended and the folder removed on the way out


def main():
    end_with_pbench()
    become_subreaper()
    signal.signal(signal.SIGTERM, ended)
    try:
        os.fstat(RECORDS_FD)
    except OSError:
        sys.stderr.write("pbench_wrap: fd 3 is not open; pbench starts the relay "
                         "(pbench wrap, docs/wrap.md)\n")
        return 2
    try:
        os.fstat(TERMINAL_FD)
    except OSError:
        os.dup2(2, TERMINAL_FD)
    return Relay(FrameWriter(RECORDS_FD), CommandReader(0)).serve()
