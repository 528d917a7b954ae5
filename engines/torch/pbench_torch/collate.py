"""The DataLoader's collate_fn: default_collate in the worker, timed as the
last column, with the batch's records riding along.

Returns (batch, samples, records, errors, t_first_ns, t_ready_ns, bytes,
worker): batch is default_collate of the good samples (None when every
sample was bad), samples how many good samples it holds (counted here:
what a sample is made of, a tensor, a path, a dict, bytes, says nothing
of the batch's size), records an int64 tensor of R x (1 + 3S + C) (empty without stage
timing), errors [(index, file, message)] of the samples dropped, worker the
DataLoader worker's id (-1: the main process)."""
import numpy as np
import torch
from torch.utils.data import get_worker_info
from torch.utils.data._utils.collate import default_collate

from .dataset import BadSample
from .timing import monotonic_ns, thread_time_ns


def as_collatable(sample):
    """A PIL image (a pipeline without normalize) becomes an H x W x C
    uint8 tensor, as pbench's own batches of uint8 images; the rest as is."""
    if hasattr(sample, "getbands") and hasattr(sample, "size"):
        array = np.asarray(sample)
        return torch.from_numpy(array if array.ndim == 3 else array[:, :, None])
    return sample


def shapes_of(sample):
    """A sample's tensor shapes, as a list of tuples (its fields in order)."""
    if isinstance(sample, torch.Tensor):
        return [tuple(sample.shape)]
    if isinstance(sample, dict):
        sample = list(sample.values())
    if isinstance(sample, (list, tuple)):
        return [shape for field in sample for shape in shapes_of(field)]
    return []


def collate_or_explain(good):
    """default_collate of the good samples; where it fails on samples of
    different shapes, a ValueError that says which and what to do (torch's
    own message, "Trying to resize storage that is not resizable", names
    neither)."""
    try:
        return default_collate(good)
    except RuntimeError as e:
        shapes = [shapes_of(sample) for sample in good]
        first = shapes[0] if shapes else []
        for k, other in enumerate(shapes[1:], 1):
            if other != first:
                raise ValueError(
                    "collate: the samples of one batch differ in shape: sample 0 of the batch "
                    "is %s, sample %d is %s; the last stage of the pipeline (or your Dataset's "
                    "__getitem__) must give every sample one shape: end it with a fixed-size "
                    "crop or resize, or batch_size: 1 (torch: %s)"
                    % (first, k, other, str(e).strip().splitlines()[0])) from e
        raise


class Collate:
    """collate_fn bound to the dataset's Recorder (the worker's copy)."""

    def __init__(self, recorder, column):
        self.recorder = recorder
        self.column = column  # collate's column: the last

    def __call__(self, items):
        cpu_start = thread_time_ns()
        start = monotonic_ns()
        good, errors = [], []
        for item in items:
            if isinstance(item, BadSample):
                errors.append((item.index, item.file, item.message))
            else:
                good.append(as_collatable(item))
        batch = collate_or_explain(good) if good else None
        rows, t_first_ns, nbytes = self.recorder.take_batch()
        if rows:
            base = 1 + 3 * self.column
            rows[0][base:base + 3] = [start, monotonic_ns(), thread_time_ns() - cpu_start]
            records = torch.tensor(rows, dtype=torch.int64)
        else:
            records = torch.empty(0, dtype=torch.int64)
        info = get_worker_info()
        worker = info.id if info is not None else -1
        return batch, len(good), records, errors, t_first_ns, monotonic_ns(), nbytes, worker
