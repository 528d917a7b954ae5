"""pbench wrap's hook against the job's own clock (docs/wrap.md, "What the
figures mean"): a job that times each next() itself, with a send to the
relay made costly on purpose and an epoch's end that takes its time, sees
the hook's records agree with it. The hook's own work inside next() is in
the wait the record carries, a batch's step ends when the loop next calls
on its loader (not after the StopIteration), and the job's last batch,
whose step's end is not seen, is not sent: what the job does after its loop
and its shutdown are in no batch."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from test_wrap_hook import STARTUP, Listener, have_torch  # noqa: E402  (after the path)
from pbench_wrap import hook  # noqa: E402

SEND_COST_S = 0.05  # each batch record's send, made slow as a busy relay makes it
END_COST_S = 0.3    # each epoch's end, as a shutdown of worker processes takes

JOB = textwrap.dedent("""
    import json, sys, time
    import torch
    from torch.utils.data import DataLoader, Dataset, Sampler
    from pbench_wrap import hook

    send = hook.LINK.send
    def costly_send(kind, payload):
        if kind == hook.MSG_BATCH:
            time.sleep(%(send)r)
        send(kind, payload)
    hook.LINK.send = costly_send

    class SlowEnd(Sampler):
        def __init__(self):
            super().__init__(None)
        def __iter__(self):
            yield from range(12)
            time.sleep(%(end)r)
        def __len__(self):
            return 12

    class Numbers(Dataset):
        def __len__(self):
            return 12
        def __getitem__(self, i):
            return torch.full((3,), float(i))

    loader = DataLoader(Numbers(), batch_size=4, sampler=SlowEnd())
    calls = []
    clock = time.perf_counter_ns
    for epoch in range(2):
        it = iter(loader)
        while True:
            t0 = clock()
            try:
                next(it)
            except StopIteration:
                calls.append(["stop", t0, clock()])
                break
            calls.append(["next", t0, clock()])
    it = iter(loader)  # a last epoch, left after two batches
    for _ in range(2):
        t0 = clock()
        next(it)
        calls.append(["next", t0, clock()])
    time.sleep(0.2)  # the job's work after its loop: no batch's step
    print(json.dumps(calls))
    """) % {"send": SEND_COST_S, "end": END_COST_S}


@unittest.skipUnless(have_torch(), "torch is not installed (apt-get install python3-torch)")
class ClockTest(unittest.TestCase):
    def run_job(self):
        with tempfile.TemporaryDirectory() as folder:
            listener = Listener(folder)
            script = os.path.join(folder, "job.py")
            with open(script, "w") as f:
                f.write(JOB)
            env = dict(os.environ, PYTHONPATH=STARTUP, PBENCH_WRAP_SOCKET=listener.path,
                       PBENCH_WRAP_CONFIG=json.dumps({"stage_timing": False}))
            proc = subprocess.Popen([sys.executable, script], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            frames = listener.frames(proc)
            out, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 0, err.decode())
            self.assertNotIn(b"measuring is off", err)
            return frames, json.loads(out.decode().strip().splitlines()[-1])

    def test_the_hooks_records_agree_with_the_jobs_own_timer(self):
        frames, calls = self.run_job()
        taken = [c for c in calls if c[0] == "next"]
        stops = [c for c in calls if c[0] == "stop"]
        batches = [hook.BATCH.unpack_from(p) for k, p in frames if k == hook.MSG_BATCH]
        ends = [m for m in (json.loads(p) for k, p in frames if k == hook.MSG_JSON)
                if m["type"] == "epoch_end"]
        # Every batch but the job's last: its step's end is not seen.
        self.assertEqual(len(taken), 8)
        self.assertEqual(len(batches), 7)
        # The costly send is inside the waits the records carry, as it is
        # inside the job's own next(): they differ by much less than it.
        gap_s = sum((t1 - t0) - (b[4] - b[3]) for (_, t0, t1), b in zip(taken, batches)) / 1e9
        self.assertLess(gap_s, len(batches) * SEND_COST_S / 2,
                        "the hook's send is outside the wait it records")
        for (_, t0, t1), b in zip(taken, batches):
            self.assertTrue(t0 <= b[3] <= b[4] <= t1, "a record outside the job's next()")
        # An epoch's end is when the loop asked for its next batch, not
        # after the epoch's StopIteration.
        self.assertEqual([e["ended"] for e in ends], ["StopIteration", "StopIteration", "exit"])
        for (_, t0, t1), end in zip(stops, ends):
            self.assertGreaterEqual(t1 - t0, END_COST_S * 1e9)
            self.assertGreaterEqual(end["t"], t0)
            self.assertLess(end["t"] - t0, (t1 - t0) / 2, "the epoch's end is booked as a step")
        # At exit, the batch before the last ends where the loop asked for
        # the last one.
        self.assertTrue(taken[-1][1] <= ends[2]["t"] <= taken[-1][2])


if __name__ == "__main__":
    unittest.main()
