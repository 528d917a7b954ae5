"""pbench wrap --ideal in the hook (docs/wrap.md, "What a perfect loader
would gain"): once the batches are kept, nothing loads beside the job's
step, as in a job that trains on batches made once in memory. The
DataLoader's workers are stopped, and a new epoch's iter() starts none (it
gives the job the same iterator again), on a job of several epochs without
persistent workers that leaves each epoch after len(loader) batches."""
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

JOB = textwrap.dedent("""
    import json
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Numbers(Dataset):
        def __len__(self):
            return 16
        def __getitem__(self, i):
            return torch.full((3,), float(i))

    loader = DataLoader(Numbers(), batch_size=2, num_workers=2,
                        multiprocessing_context="fork")
    epochs, seen = [], []
    for epoch in range(4):
        it = iter(loader)
        for _ in range(len(loader)):
            seen.append(int(next(it)[0][0]))
        epochs.append({"iterator": id(it),
                       "alive": sum(w.is_alive() for w in getattr(it, "_workers", []))})
    print(json.dumps({"epochs": epochs, "seen": seen}))
    """)


@unittest.skipUnless(have_torch(), "torch is not installed (apt-get install python3-torch)")
class IdealTest(unittest.TestCase):
    def test_nothing_loads_once_the_batches_are_kept(self):
        with tempfile.TemporaryDirectory() as folder:
            listener = Listener(folder)
            script = os.path.join(folder, "job.py")
            with open(script, "w") as f:
                f.write(JOB)
            config = {"stage_timing": False,
                      "ideal": {"count": 3, "warmup": 2, "cap_bytes": 1 << 30, "site": ""}}
            env = dict(os.environ, PYTHONPATH=STARTUP, PBENCH_WRAP_SOCKET=listener.path,
                       PBENCH_WRAP_CONFIG=json.dumps(config))
            proc = subprocess.Popen([sys.executable, script], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            frames = listener.frames(proc)
            out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err.decode())
        self.assertNotIn(b"measuring is off", err)
        job = json.loads(out.decode().strip().splitlines()[-1])
        messages = [json.loads(p) for k, p in frames if k == hook.MSG_JSON]
        ideal = [m for m in messages if m["type"] == "ideal"]
        self.assertEqual(len(ideal), 1)
        self.assertEqual(ideal[0]["kept"], 3)
        self.assertEqual(ideal[0]["workers_stopped"], 2)
        # The first epoch's iterator gave the batches kept; its workers are
        # stopped, and the later epochs got it again: no new workers.
        epochs = job["epochs"]
        self.assertEqual([e["alive"] for e in epochs], [0, 0, 0, 0])
        self.assertEqual(len({e["iterator"] for e in epochs}), 1)
        # After the 2 warm-up and 3 kept batches, the kept ones in turn.
        kept = job["seen"][2:5]
        self.assertEqual(job["seen"][5:], [kept[n % 3] for n in range(len(job["seen"]) - 5)])
        # Every batch the job took but its last has its record.
        batches = [hook.BATCH.unpack_from(p) for k, p in frames if k == hook.MSG_BATCH]
        self.assertEqual(len(batches), len(job["seen"]) - 1)
        self.assertEqual([b[2] for b in batches[5:]], [-2] * (len(batches) - 5))


if __name__ == "__main__":
    unittest.main()
