"""The sample index pbench writes for an engine, and this rank's share.

Each record is four NUL-ended fields: offset (decimal, -1 for a loose
file), size, member (tar key or empty) and path (raw bytes). The rank takes
samples RANK, RANK + COUNT, ... of pbench's order, as pbench's sampler and
torch's DistributedSampler (without padding) do."""
import os
from collections import namedtuple

Entry = namedtuple("Entry", "offset size member path")


def read_index(path):
    """Reads the index file into a list of Entry (path as bytes, member as
    str). Raises ValueError when its field count is not a multiple of 4."""
    with open(path, "rb") as f:
        data = f.read()
    fields = data.split(b"\0")
    if fields and fields[-1] == b"":
        fields.pop()
    if len(fields) % 4:
        raise ValueError("%s: %d fields, not records of 4" % (path, len(fields)))
    return [Entry(int(fields[i]), int(fields[i + 1]), fields[i + 2].decode("utf-8", "replace"),
                  fields[i + 3])
            for i in range(0, len(fields), 4)]


def parse_shard(text):
    """"RANK/COUNT" -> (rank, count); raises ValueError on anything else."""
    rank, count = (int(part) for part in str(text or "0/1").split("/"))
    if count < 1 or not 0 <= rank < count:
        raise ValueError("dataset.shard %r is not RANK/COUNT with 0 <= RANK < COUNT" % text)
    return rank, count


def shard_indices(total, rank, count):
    """The dataset indices this rank reads: rank, rank + count, ..."""
    return list(range(rank, total, count))


def entry_name(entry):
    """The file a user reads in an error: path, or path:member for tar."""
    path = os.fsdecode(entry.path)
    return "%s:%s" % (path, entry.member) if entry.offset >= 0 and entry.member else path
