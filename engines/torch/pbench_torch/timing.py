"""Per-sample stage records, kept by each loader worker for the batch it is
building.

A Recorder belongs to one worker process (each forked worker has its own
copy; with 0 workers the main process has it): no lock is ever taken. It
holds one row per sample of the batch in flight, each row the protocol's
record: index, S x (start_ns, end_ns, cpu_ns), C counters. The dataset
begins a row per sample, the timed wrappers fill their columns, and the
collate function takes the rows as one int64 tensor and starts the next
batch. With stage timing off nothing is wrapped and no row is written; the
batch still gets its first-sample time and its bytes."""
import time

monotonic_ns = time.monotonic_ns
thread_time_ns = time.thread_time_ns


class Recorder:
    """The records of the batch a worker is building.

    columns, counters: S and C of the engine's `ready`. enabled: stage
    timing for this repeat (set before the workers start)."""

    def __init__(self, columns, counters, enabled=True):
        self.columns = columns
        self.counters = counters
        self.width = 1 + 3 * columns + counters
        self.blank = [0] * self.width
        self.enabled = enabled
        self.rows = []
        self.kept = 0          # rows of good samples in this batch
        self.row = self.blank  # the sample in flight (blank: none)
        self.t_first_ns = 0
        self.bytes = 0

    def begin_sample(self, index):
        """Starts the record of sample index (its row, if timing)."""
        if self.t_first_ns == 0:
            self.t_first_ns = monotonic_ns()
        if not self.enabled:
            return
        if self.kept == len(self.rows):
            self.rows.append(list(self.blank))
        row = self.rows[self.kept]
        row[:] = self.blank
        row[0] = index
        self.row = row

    def end_sample(self, ok):
        """Ends the sample's record; a bad sample's row is reused."""
        if self.enabled and ok:
            self.kept += 1
        self.row = self.blank

    def add_bytes(self, count):
        """Counts bytes read for the batch's samples."""
        self.bytes += count

    def set_column(self, column, start_ns, end_ns, cpu_ns):
        """Fills column's (start, end, cpu) of the sample in flight."""
        base = 1 + 3 * column
        row = self.row
        row[base] = start_ns
        row[base + 1] = end_ns
        row[base + 2] = cpu_ns

    def take_out(self, column, first, end):
        """Takes columns [first, end)'s wall and CPU time out of column's
        (which timed a call that contains them): column keeps its start, and
        its end moves back by their wall time."""
        row = self.row
        base = 1 + 3 * column
        for k in range(first, end):
            inner = 1 + 3 * k
            row[base + 1] -= row[inner + 1] - row[inner]
            row[base + 2] -= row[inner + 2]
        row[base + 1] = max(row[base + 1], row[base])
        row[base + 2] = max(row[base + 2], 0)

    def add_counter(self, counter, value):
        """Adds value to counter number `counter` of the sample in flight."""
        if self.enabled:
            self.row[1 + 3 * self.columns + counter] += value

    def timed(self, column, fn, name=None):
        """fn wrapped to record its start, end and thread CPU in column."""
        return TimedCall(self, column, fn, name)

    def take_batch(self):
        """Ends the batch: returns (rows, t_first_ns, bytes) and starts the
        next. rows is a list of the good samples' records."""
        rows = self.rows[:self.kept] if self.enabled else []
        batch = ([list(r) for r in rows], self.t_first_ns, self.bytes)
        self.kept = 0
        self.t_first_ns = 0
        self.bytes = 0
        return batch


class TimedCall:
    """A callable (a transform) that records its own time in one column.

    A class rather than a closure so that a wrapped transform still prints
    as itself (repr) inside a user's Compose."""

    def __init__(self, recorder, column, fn, name=None):
        self.recorder = recorder
        self.column = column
        self.fn = fn
        self.name = name

    def __call__(self, value):
        cpu_start = thread_time_ns()
        start = monotonic_ns()
        value = self.fn(value)
        end = monotonic_ns()
        self.recorder.set_column(self.column, start, end, thread_time_ns() - cpu_start)
        return value

    def __repr__(self):
        return "Timed(%r)" % (self.fn,)


class SubStageClock:
    """Laps of a stage's sub-stages (the video decoder's open, seek, demux,
    decode, convert): each lap charges the time since the last one to a
    sub-stage. A sub-stage's column gets its first start, start + its
    summed wall time as end, and its summed thread CPU: its end - start is
    its total even when its laps interleave with others'."""

    def __init__(self, recorder, first_column, count):
        self.recorder = recorder
        self.first_column = first_column
        self.start = [0] * count
        self.wall = [0] * count
        self.cpu = [0] * count
        self.last_wall = 0
        self.last_cpu = 0

    def reset(self):
        """Starts a sample: zero sums, the clock running from now."""
        count = len(self.start)
        self.start = [0] * count
        self.wall = [0] * count
        self.cpu = [0] * count
        self.last_cpu = thread_time_ns()
        self.last_wall = monotonic_ns()

    def lap(self, sub):
        """Charges the time since the last lap to sub-stage sub."""
        now_cpu = thread_time_ns()
        now = monotonic_ns()
        if self.start[sub] == 0:
            self.start[sub] = self.last_wall
        self.wall[sub] += now - self.last_wall
        self.cpu[sub] += now_cpu - self.last_cpu
        self.last_wall = now
        self.last_cpu = now_cpu

    def add(self, sub, start_ns, wall_ns, cpu_ns):
        """Charges a span measured elsewhere (a request made on a prefetch
        thread) to sub-stage sub: its start if the first, its wall and CPU."""
        if self.start[sub] == 0:
            self.start[sub] = start_ns
        self.wall[sub] += wall_ns
        self.cpu[sub] += cpu_ns

    def flush(self):
        """Writes the sums into the sample's sub-stage columns."""
        for sub, start in enumerate(self.start):
            if start:
                self.recorder.set_column(self.first_column + sub, start, start + self.wall[sub],
                                         self.cpu[sub])
