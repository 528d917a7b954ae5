"""pbench wrap's hook (pbench_wrap.hook) and start-up file, in processes of
their own: the torch it patches is the one it was tested with, a job's
DataLoader sends what the relay expects, and the user's own sitecustomize
still runs."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINES = os.path.dirname(HERE)
STARTUP = os.path.join(ENGINES, "pbench_wrap", "startup")
sys.path.insert(0, ENGINES)

from pbench_wrap import hook  # noqa: E402  (after the path)


def have_torch():
    import importlib.util
    return all(importlib.util.find_spec(name) is not None for name in ("torch", "torchvision"))


class Listener:
    """A stand-in for the relay: accepts the job's connections and reads
    their frames until they close."""

    def __init__(self, folder):
        self.path = os.path.join(folder, "records")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(16)
        self.sock.settimeout(60)

    def frames(self, proc):
        import selectors
        selector = selectors.DefaultSelector()
        selector.register(self.sock, selectors.EVENT_READ)
        buffers, frames = {}, []
        while proc.poll() is None or buffers:
            for key, _ in selector.select(0.1):
                if key.fileobj is self.sock:
                    conn, _ = self.sock.accept()
                    buffers[conn] = b""
                    selector.register(conn, selectors.EVENT_READ)
                    continue
                chunk = key.fileobj.recv(1 << 20)
                if not chunk:
                    selector.unregister(key.fileobj)
                    key.fileobj.close()
                    del buffers[key.fileobj]
                    continue
                buf = buffers[key.fileobj] + chunk
                while len(buf) >= 8:
                    length, kind = hook.HEAD.unpack_from(buf)
                    if len(buf) < 4 + length:
                        break
                    payload, buf = buf[8:4 + length], buf[4 + length:]
                    frames.append((kind, payload))
                buffers[key.fileobj] = buf
            if proc.poll() is not None and not selector.select(0.2):
                break
        return frames


JOB = textwrap.dedent("""
    import torch
    from torch.utils.data import DataLoader, Dataset
    from torchvision import transforms

    class Numbers(Dataset):
        def __init__(self):
            self.transform = transforms.Compose([transforms.Lambda(lambda x: x * 2),
                                                 transforms.Lambda(lambda x: x + 1)])
        def __len__(self):
            return 12
        def __getitem__(self, i):
            return self.transform(torch.full((3,), float(i))), i

    loader = DataLoader(Numbers(), batch_size=4, num_workers=int(__import__("sys").argv[1]),
                        prefetch_factor=3 if int(__import__("sys").argv[1]) else 2)
    total = 0
    for images, labels in loader:
        total += int(labels.sum())
    print("total", total)
    """)


@unittest.skipUnless(have_torch(), "torch is not installed (apt-get install python3-torch)")
class HookTest(unittest.TestCase):
    def test_torch_is_a_tested_version(self):
        import torch
        from torch.utils.data import dataloader
        from torch.utils.data._utils import fetch
        version = ".".join(torch.__version__.split(".")[:2])
        self.assertIn(version, hook.TESTED_TORCH,
                      "pbench wrap's hook was tested with torch %s, this is torch %s: check "
                      "what pbench_wrap/hook.py patches against it, then add it to TESTED_TORCH"
                      % (", ".join(hook.TESTED_TORCH), torch.__version__))
        self.assertIsNone(hook.check_internals("torch.utils.data.dataloader", dataloader))
        self.assertIsNone(hook.check_internals("torch.utils.data._utils.fetch", fetch))

    def run_job(self, workers, overrides=None):
        with tempfile.TemporaryDirectory() as folder:
            listener = Listener(folder)
            script = os.path.join(folder, "job.py")
            with open(script, "w") as f:
                f.write(JOB)
            env = dict(os.environ, PYTHONPATH=STARTUP, PBENCH_WRAP_SOCKET=listener.path,
                       PBENCH_WRAP_CONFIG=json.dumps({"stage_timing": True,
                                                      "overrides": overrides or {}}))
            proc = subprocess.Popen([sys.executable, script, str(workers)], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            frames = listener.frames(proc)
            out, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 0, err.decode())
            self.assertIn(b"total 66", out)  # what the job computes is unchanged
            self.assertNotIn(b"measuring is off", err)
            return frames

    def check_frames(self, frames, workers):
        messages = [json.loads(p) for k, p in frames if k == hook.MSG_JSON]
        loaders = [m for m in messages if m["type"] == "loader"]
        self.assertEqual(len(loaders), 1)
        self.assertTrue(loaders[0]["site"].endswith("job.py:15"), loaders[0]["site"])
        self.assertEqual(loaders[0]["dataset"], "__main__.Numbers")
        columns = [m for m in messages if m["type"] == "columns"]
        self.assertTrue(columns)
        names = ["getitem", "Lambda", "Lambda_2", "collate"] + (["worker_start"] if workers else [])
        self.assertEqual(columns[0]["names"], names)
        batches = [hook.BATCH.unpack_from(p) for k, p in frames if k == hook.MSG_BATCH]
        self.assertEqual(len(batches), 3)
        for _, _, worker, t_wait, t_taken, samples in batches:
            self.assertLessEqual(t_wait, t_taken)
            self.assertEqual(samples, 4)
            self.assertEqual(worker, -1 if workers == 0 else worker)
        fetches = [(hook.FETCH.unpack_from(p), p[hook.FETCH.size:]) for k, p in frames
                   if k == hook.MSG_FETCH]
        self.assertEqual(len(fetches), 3)
        indices = []
        for fields, rows in fetches:
            _, _, _, samples, width, count, t_first, t_ready = fields
            self.assertEqual((samples, width, count), (4, len(names), 4))
            self.assertLess(t_first, t_ready)
            values = [int.from_bytes(rows[i:i + 8], "little") for i in range(0, len(rows), 8)]
            for r in range(count):
                row = values[r * (1 + 3 * width):(r + 1) * (1 + 3 * width)]
                indices.append(row[0])
                for column in range(3):  # getitem and the two Lambdas: timed
                    start, end = row[1 + 3 * column], row[2 + 3 * column]
                    self.assertTrue(0 < start <= end, (r, column, row))
        self.assertEqual(sorted(indices), list(range(12)))

    def test_a_job_without_workers(self):
        self.check_frames(self.run_job(0), 0)

    def test_a_job_with_workers(self):
        frames = self.run_job(2)
        self.check_frames(frames, 2)
        workers = [json.loads(p) for k, p in frames if k == hook.MSG_JSON
                   and json.loads(p)["type"] == "worker"]
        self.assertEqual(sorted(w["worker"] for w in workers), [0, 1])

    def test_settings_reach_the_dataloader(self):
        frames = self.run_job(2, {"workers": 0})
        loader = [json.loads(p) for k, p in frames if k == hook.MSG_JSON
                  and json.loads(p)["type"] == "loader"][0]
        self.assertEqual(loader["args"]["workers"], 0)
        # torch refuses prefetch_factor 3 without workers: it goes back to its default
        self.assertEqual(loader["changed"]["num_workers"], [2, 0])
        self.assertEqual(loader["changed"]["prefetch_factor"][0], 3)


class StartupTest(unittest.TestCase):
    def test_users_own_sitecustomize_still_runs(self):
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "sitecustomize.py"), "w") as f:
                f.write("import builtins\nbuiltins.USERS_SITE = 'ran'\n")
            env = dict(os.environ, PYTHONPATH=STARTUP + ":" + folder)
            env.pop("PBENCH_WRAP_SOCKET", None)
            out = subprocess.run([sys.executable, "-c", "print(USERS_SITE)"], env=env,
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.stdout.strip(), "ran", out.stderr)

    def test_samples_counted_whatever_a_batch_holds(self):
        self.assertEqual(hook.samples_in(["a", "b", "c"]), 3)
        self.assertEqual(hook.samples_in({"name": ["a", "b"]}), 2)
        self.assertEqual(hook.unique_names(["Resize", "Resize", "Crop"]),
                         ["Resize", "Resize_2", "Crop"])


if __name__ == "__main__":
    unittest.main()
