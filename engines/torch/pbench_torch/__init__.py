"""pbench's torch engine: a torch.utils.data.DataLoader driven over pbench's
engine protocol (docs/engines.md, version 1).

Run as ``python3 -m pbench_torch`` with engines/torch on PYTHONPATH; pbench
sends commands on stdin and reads framed records on fd 3."""

PROTOCOL_VERSION = 1
ENGINE_NAME = "torch"
