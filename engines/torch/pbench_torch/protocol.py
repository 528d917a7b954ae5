"""The wire format of docs/engines.md: frames out on fd 3, JSON command
lines in on stdin.

A frame is ``u32 length`` (bytes after the field), ``u32 type``, payload,
little-endian. Type 1 is a UTF-8 JSON object; type 2 a batch: the fixed
header BATCH_HEADER (packed, no padding, 88 bytes; its fields and their
order, BATCH_FIELDS, come from engines/batch_header.json, the description
pbench's C struct is tested against) followed by the records,
R x (1 + 3S + C) little-endian 64-bit integers.

Names travel as bytes: a file name (or a folder) that is not UTF-8 comes
as readable text, each byte that is not UTF-8 the Latin-1 character of its
value, with its exact bytes in hex in a field of the same name and
"_bytes" after it ("file" and "file_bytes"), as a result file keeps them.
No JSON text holds a lone surrogate (os.fsdecode's U+DC80 to U+DCFF), which
pbench's JSON reader rightly refuses."""
import json
import os
import select
import struct

FRAME_JSON = 1
FRAME_BATCH = 2

FRAME_HEAD = struct.Struct("<II")
HEADER_DESCRIPTION = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "batch_header.json")
STRUCT_CODES = {"u64": "Q", "u32": "I", "i32": "i"}


def batch_header_layout(path=HEADER_DESCRIPTION):
    """(field names, struct.Struct) of the batch header described in path."""
    with open(path) as f:
        description = json.load(f)
    names = tuple(name for name, _ in description["fields"])
    layout = struct.Struct("<" + "".join(STRUCT_CODES[kind] for _, kind in description["fields"]))
    if layout.size != description["size"]:
        raise ValueError("%s: fields of %d bytes, size %d" % (path, layout.size,
                                                              description["size"]))
    return names, layout


BATCH_FIELDS, BATCH_HEADER = batch_header_layout()

# What pbench's C side applies too (limits, ranges, the retry backoff),
# described once in engines/shared.json; tests/test_shared_limits.c checks
# pbench's constants against the same file.
SHARED_DESCRIPTION = os.path.join(os.path.dirname(HEADER_DESCRIPTION), "shared.json")


def shared_limits(path=SHARED_DESCRIPTION):
    """The shared description at path, as a dict."""
    with open(path) as f:
        return json.load(f)


SHARED = shared_limits()
MAX_FRAME_BYTES = SHARED["frame_max_bytes"]

# The option values the torch engine cannot run as pbench means them,
# described once in engines/engine_rules.json: pbench refuses them at the
# config's line (its engine rows, held to the file by
# tests/test_engine_rules.c), and the engine applies the same rules
# (stages.refuse_unrunnable) when driven by hand.
RULES_DESCRIPTION = os.path.join(os.path.dirname(HEADER_DESCRIPTION), "engine_rules.json")


def engine_rules(path=RULES_DESCRIPTION, engine="torch"):
    """The rules of engine (its loader.engine name) in the description at
    path: a list of {owner, option, allowed, why, when, instead}."""
    with open(path) as f:
        return json.load(f)[engine]


ENGINE_RULES = engine_rules()


def readable(text):
    """text with its surrogate escapes (os.fsdecode's U+DC80 to U+DCFF for a byte
    that is not UTF-8) as the Latin-1 character of that byte: what pbench
    shows for such a name (pb_json_text)."""
    if not isinstance(text, str):
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return "".join(chr(ord(c) - 0xdc00) if 0xdc80 <= ord(c) <= 0xdcff else
                       "\ufffd" if 0xd800 <= ord(c) <= 0xdfff else c for c in text)


def without_surrogates(message):
    """A JSON-ready copy of message with every string made readable()."""
    if isinstance(message, str):
        return readable(message)
    if isinstance(message, dict):
        return {readable(k): without_surrogates(v) for k, v in message.items()}
    if isinstance(message, (list, tuple)):
        return [without_surrogates(v) for v in message]
    return message


def name_fields(key, name):
    """{key: readable name} and, for a name that is not UTF-8, {key +
    "_bytes": its bytes in hex}. name is bytes or a str from os.fsdecode."""
    raw = name if isinstance(name, bytes) else os.fsencode(name)
    fields = {key: readable(os.fsdecode(raw))}
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        fields[key + "_bytes"] = raw.hex()
    return fields


def name_field(command, key):
    """The name a command's key holds, as os.fsdecode gives it (the exact
    bytes of key + "_bytes" when pbench sent them)."""
    raw = command.get(key + "_bytes")
    if isinstance(raw, str):
        try:
            return os.fsdecode(bytes.fromhex(raw))
        except ValueError:
            pass
    return command.get(key)


class FrameWriter:
    """Writes whole frames to one file descriptor (fd 3). Not thread-safe:
    only the loop in the main process writes."""

    def __init__(self, fd):
        self.fd = fd

    def _write(self, frame_type, payload):
        """Writes one frame, retrying short writes; raises ValueError when
        the payload exceeds the protocol's 16 MiB."""
        if len(payload) + 4 > MAX_FRAME_BYTES:
            raise ValueError("frame of %d bytes exceeds 16 MiB" % len(payload))
        view = memoryview(FRAME_HEAD.pack(len(payload) + 4, frame_type) + payload)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]

    def json(self, message):
        """Sends a JSON frame; message is a dict with a "type" key. Text
        with surrogate escapes is sent readable() (see name_fields)."""
        self._write(FRAME_JSON, json.dumps(without_surrogates(message),
                                           separators=(",", ":")).encode("utf-8"))

    def batch(self, header, records):
        """Sends a batch frame. header is the BATCH_HEADER field tuple;
        records the bytes of the R records (b"" without stage timing)."""
        self._write(FRAME_BATCH, BATCH_HEADER.pack(*header) + records)


class CommandReader:
    """Reads pbench's JSON command lines from a file descriptor (stdin).

    next_command blocks for the next one; poll returns one only if a whole
    line is already there (select with a zero timeout), as the loop asks
    once per batch. End of input reads as a "close" command."""

    def __init__(self, fd):
        self.fd = fd
        self.pending = b""
        self.eof = False

    def _take_line(self):
        """The next whole line parsed as JSON, or None if none is buffered."""
        while b"\n" in self.pending:
            line, self.pending = self.pending.split(b"\n", 1)
            if line.strip():
                return json.loads(line)
        return None

    def _fill(self):
        """Reads what the pipe holds (blocking until something comes)."""
        chunk = os.read(self.fd, 65536)
        if not chunk:
            self.eof = True
        self.pending += chunk

    def next_command(self):
        """Blocks for the next command; {"type": "close"} at end of input."""
        while True:
            command = self._take_line()
            if command is not None:
                return command
            if self.eof:
                return {"type": "close"}
            self._fill()

    def poll(self):
        """The next command if one has arrived, else None; never blocks."""
        command = self._take_line()
        if command is not None or self.eof:
            return command if command is not None else {"type": "close"}
        readable, _, _ = select.select([self.fd], [], [], 0)
        if readable:
            self._fill()
            command = self._take_line()
            if command is None and self.eof:
                return {"type": "close"}
        return command
