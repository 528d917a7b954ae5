"""Map-style Datasets the DataLoader runs: pbench's index through the
config's stages, or the user's own Dataset with its transforms timed.

__getitem__ returns the sample, or a BadSample when anything raised (the
collate function drops it and reports it): a corrupt file never stops the
loader. Each sample's record goes to the worker's Recorder (timing.py)."""
import traceback

from torch.utils.data import Dataset

from .errors import SampleError
from .index import entry_name
from .protocol import SHARED
from .timing import Recorder, SubStageClock, TimedCall
from . import userdata


class BadSample:
    """A sample that raised: its index in the index, its file, a sentence."""

    def __init__(self, index, file, message):
        self.index = index
        self.file = file
        self.message = message


def error_message(error):
    """A one-line sentence for an exception a sample raised."""
    text = str(error).strip().splitlines()
    detail = text[0] if text else ""
    if isinstance(error, SampleError):
        return detail
    name = type(error).__name__
    return "%s: %s" % (name, detail) if detail else name


class IndexDataset(Dataset):
    """pbench's sample index (this rank's share) through the pipeline's
    stages. columns() and counters() are the `ready` lists; collate last."""

    def __init__(self, entries, positions, stages):
        self.entries = entries        # the whole index
        self.positions = positions    # this rank's indices into it
        self.stages = stages
        self._columns = []
        self._counters = []
        self.stage_columns = []
        for stage in stages:
            self.stage_columns.append(len(self._columns))
            self._columns.append({"name": stage.name, "parent": ""})
            self._columns += [{"name": s, "parent": stage.name} for s in stage.substages]
            self._counters += [{"stage": stage.name, "name": c} for c in stage.counters]
        self._columns.append({"name": "collate", "parent": ""})
        self.recorder = Recorder(len(self._columns), len(self._counters))
        # A read stage that requests objects ahead (stages.RemoteRead).
        self.prefetch = next((getattr(stage.fn, "prefetch", None) for stage in stages
                              if stage.name == "read"), None)
        self.steps = []
        self.set_timing(True)

    def columns(self):
        return self._columns

    def counters(self):
        return self._counters

    def set_timing(self, enabled):
        """Picks timed or bare stages (before the workers fork)."""
        recorder = self.recorder
        recorder.enabled = enabled
        self.steps = []
        counter_base = 0
        for stage, column in zip(self.stages, self.stage_columns):
            fn = stage.fn
            if stage.decoder is not None:
                stage.decoder.recorder = recorder if enabled else None
                stage.decoder.counter_base = counter_base
                stage.decoder.clock = (SubStageClock(recorder, column + 1, len(stage.substages))
                                       if enabled and stage.substages else None)
            counter_base += len(stage.counters)
            self.steps.append((stage.name == "read", TimedCall(recorder, column, fn)
                               if enabled else fn))

    def __len__(self):
        return len(self.positions)

    def file_of(self, index):
        """The file of sample index (in the index), or ""."""
        return entry_name(self.entries[index]) if 0 <= index < len(self.entries) else ""

    def __getitems__(self, indices):
        """A batch's samples, as the DataLoader's fetcher asks for them:
        the read stage first requests all their objects ahead (at most
        dataset.requests_in_flight at a time), then each sample runs as
        __getitem__ runs it."""
        if self.prefetch is not None:
            self.prefetch([self.entries[self.positions[i]] for i in indices])
        return [self[i] for i in indices]

    def __getitem__(self, i):
        index = self.positions[i]
        entry = self.entries[index]
        recorder = self.recorder
        recorder.begin_sample(index)
        value = entry
        try:
            for is_read, step in self.steps:
                value = step(value)
                if is_read:
                    recorder.add_bytes(len(value))
        except Exception as e:
            recorder.end_sample(False)
            return BadSample(index, entry_name(entry), error_message(e))
        if not any(is_read for is_read, _ in self.steps):
            recorder.add_bytes(entry.size)
        recorder.end_sample(True)
        return value


MAX_COLUMNS = SHARED["engine_max_columns"]  # the columns pbench reads (engines/shared.json)
FOLDED_ROW = "more_transforms"


class UserDataset(Dataset):
    """The user's Dataset (dataset.python), this rank's share of it, its
    Compose's transforms timed one column each, then the config's `python`
    stages. Column 0, "getitem", is the rest of __getitem__ (opening and
    decoding the file, as the user's code does it): the whole call less
    its transforms' time, so the rows add up to the workers' work. Without
    a Compose it is the whole __getitem__."""

    def __init__(self, dataset, positions, stages):
        self.dataset = dataset
        self.positions = positions
        self.stages = stages
        self.compose = userdata.compose_of(dataset)
        self.original_transforms = list(self.compose.transforms) if self.compose else []
        # pbench reads at most MAX_COLUMNS columns: getitem, the
        # transforms, the python stages, collate. Past that the last
        # transforms are timed together, as one row.
        room = MAX_COLUMNS - 2 - len(stages)
        self.plain_transforms = list(self.original_transforms)
        names = userdata.transform_names(self.compose) if self.compose else []
        self.folded = 0
        if len(self.plain_transforms) > room >= 1:
            self.folded = len(self.plain_transforms) - (room - 1)
            rest = type(self.compose)(self.plain_transforms[room - 1:])
            self.plain_transforms = self.plain_transforms[:room - 1] + [rest]
            names = names[:room - 1] + [FOLDED_ROW]
        names = ["getitem"] + names + [stage.name for stage in stages]
        self._columns = [{"name": n, "parent": ""} for n in names]
        self._columns.append({"name": "collate", "parent": ""})
        self.recorder = Recorder(len(self._columns), 0)
        self.timed_getitem = None
        self.steps = []
        self.set_timing(True)

    def columns(self):
        return self._columns

    def counters(self):
        return []

    def set_timing(self, enabled):
        """Wraps (or unwraps) the transforms (before the workers fork)."""
        recorder = self.recorder
        recorder.enabled = enabled
        first = 1 + len(self.plain_transforms)
        if self.compose:
            self.compose.transforms = ([TimedCall(recorder, 1 + c, t)
                                        for c, t in enumerate(self.plain_transforms)]
                                       if enabled else list(self.original_transforms))
        self.timed_getitem = (TimedCall(recorder, 0, self.dataset.__getitem__)
                              if enabled else None)
        self.steps = [TimedCall(recorder, first + k, s.fn) if enabled else s.fn
                      for k, s in enumerate(self.stages)]

    def __len__(self):
        return len(self.positions)

    def file_of(self, index):
        """The file of the user's sample index, as the Dataset names it, or
        "" (userdata.sample_file)."""
        return userdata.sample_file(self.dataset, index)

    def __getitem__(self, i):
        index = self.positions[i]
        recorder = self.recorder
        recorder.begin_sample(index)
        try:
            getitem = self.timed_getitem or self.dataset.__getitem__
            value = getitem(index)
            if self.timed_getitem and self.plain_transforms:
                recorder.take_out(0, 1, 1 + len(self.plain_transforms))
            for step in self.steps:
                value = step(value)
        except Exception as e:
            recorder.end_sample(False)
            return BadSample(index, userdata.sample_file(self.dataset, index),
                             error_message(e))
        recorder.end_sample(True)
        return value


def describe_exception():
    """The last line of the current traceback (for fatal engine errors)."""
    return traceback.format_exc().strip().splitlines()[-1]
