"""pbench wrap's view of the job's processes (pbench_wrap.procs) and the
hook's behaviour across fork (pbench_wrap.hook), without torch: why a
Python cannot load the hook, read from its command line and environment;
and a child forked while another thread holds the hook's lock sends its
own records instead of waiting for good."""
import os
import socket
import sys
import tempfile
import subprocess
import textwrap
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINES = os.path.dirname(HERE)
STARTUP = os.path.join(ENGINES, "pbench_wrap", "startup")
sys.path.insert(0, ENGINES)

from pbench_wrap import procs  # noqa: E402  (after the path)

HOOKED = {"PBENCH_WRAP_SOCKET": "/tmp/x/records", "PYTHONPATH": STARTUP + ":/job"}


class HooklessTest(unittest.TestCase):
    def test_flags_that_keep_the_hook_out(self):
        for argv, letter in ((["python3", "-S", "train.py"], "S"),
                             (["/usr/bin/python3.11", "-uI", "train.py"], "I"),
                             (["python", "-W", "ignore", "-E", "-m", "train"], "E"),
                             (["python3", "-X", "dev", "-sSc", "pass"], "S")):
            reason = procs.hookless_reason(argv, HOOKED, STARTUP)
            self.assertIsNotNone(reason, argv)
            self.assertIn("python -%s" % letter, reason)

    def test_flags_that_do_not(self):
        for argv in (["python3", "-u", "train.py", "-S"], ["python3", "-c", "pass", "-I"],
                     ["python3", "-m", "torch.distributed.run", "-E"], ["python3", "train.py"],
                     ["python3", "-X", "S", "train.py"]):
            self.assertIsNone(procs.hookless_reason(argv, HOOKED, STARTUP), argv)

    def test_not_a_python(self):
        self.assertIsNone(procs.hookless_reason(["sh", "-S"], {}, STARTUP))
        self.assertIsNone(procs.python_flags(["pythonic-tool", "-S"]))

    def test_environments_that_keep_the_hook_out(self):
        cleared = procs.hookless_reason(["python3", "train.py"], {"PATH": "/bin"}, STARTUP)
        self.assertIn("no PBENCH_WRAP_SOCKET", cleared)
        reset = procs.hookless_reason(["python3", "train.py"],
                                      dict(HOOKED, PYTHONPATH="/job"), STARTUP)
        self.assertIn("PYTHONPATH is '/job'", reset)
        self.assertIn("a launcher reset PYTHONPATH", reset)

    def test_env_in_front_of_the_command(self):
        self.assertIn("env -i", procs.command_reason(["env", "-i", "python3", "t.py"], STARTUP))
        self.assertIn("a launcher reset PYTHONPATH",
                      procs.command_reason(["env", "-u", "PYTHONPATH", "python3", "t.py"],
                                           STARTUP))
        self.assertIn("PYTHONPATH is '/x'",
                      procs.command_reason(["env", "PYTHONPATH=/x", "python3", "t.py"], STARTUP))
        self.assertIsNone(procs.command_reason(["env", "A=1", "python3", "t.py"], STARTUP))
        self.assertIsNone(procs.command_reason(["python3", "t.py"], STARTUP))

    def test_a_running_process(self):
        child = subprocess.Popen([sys.executable, "-S", "-c", "import time; time.sleep(30)"],
                                 env=dict(os.environ, **HOOKED))
        try:
            reason = None
            for _ in range(200):  # until its cmdline is the interpreter's
                reason = procs.process_reason(child.pid, STARTUP)
                if reason:
                    break
                time.sleep(0.05)
            self.assertIn("(pid %d): python -S" % child.pid, reason or "")
        finally:
            child.kill()
            child.wait()


FORK_WHILE_HELD = textwrap.dedent("""
    import os, sys, threading
    sys.path.insert(0, %(engines)r)
    from pbench_wrap import hook
    hook.install()
    held, release = threading.Event(), threading.Event()
    def hold():
        with hook.LINK.lock:  # a thread sending when the loop forks
            held.set()
            release.wait()
    thread = threading.Thread(target=hold)
    thread.start()
    held.wait()
    pid = os.fork()
    if pid == 0:
        hook.LINK.json({"type": "child", "pid": os.getpid()})
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    release.set()
    thread.join()
    print("child status", status)
""")


class ForkTest(unittest.TestCase):
    def test_fork_while_another_thread_holds_the_lock(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "records")
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(path)
            listener.listen(8)
            listener.settimeout(60)
            job = subprocess.Popen([sys.executable, "-c", FORK_WHILE_HELD % {"engines": ENGINES}],
                                   env=dict(os.environ, PBENCH_WRAP_SOCKET=path),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            received = b""
            try:
                while b'"type":"child"' not in received:  # the child's own connection
                    conn, _ = listener.accept()  # a child that waits for good: timeout
                    conn.settimeout(60)
                    while True:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        received += chunk
                        if b'"type":"child"' in received:
                            break
                    conn.close()
            finally:
                out, err = job.communicate(timeout=60) if b"child" in received else (b"", b"")
                job.kill()
                listener.close()
            self.assertIn(b"child status 0", out, err.decode())


if __name__ == "__main__":
    unittest.main()


class WorkerPidTest(unittest.TestCase):
    """A worker row names the process that built its batches even when its
    start message reached the relay before the DataLoader's own (two
    connections, read in either order): the relay takes it from the
    connection the batch's record came on."""

    def test_pid_from_the_fetching_connection(self):
        from pbench_wrap import hook, relay
        job = relay.Job(None, 0, True)
        key = (100, 1)
        loader = job.loaders[key] = relay.Loader(key, {})
        job.on_fetch(hook.FETCH.pack(100, 1, 0, 8, 0, 0, 1, 2), 200)
        job.count_worker(loader, 0, 8, 0, 0, b"", 10)
        self.assertEqual(loader.per_worker[0][0], 200)
        # A start message, where it came, still names the worker.
        loader.workers[1] = 300
        job.on_fetch(hook.FETCH.pack(100, 1, 1, 8, 0, 0, 1, 2), 301)
        job.count_worker(loader, 1, 8, 0, 0, b"", 10)
        self.assertEqual(loader.per_worker[1][0], 300)

    def test_untimed_samples_have_no_cpu(self):
        """--overhead's paired run times no sample: its worker rows have no
        CPU (none measured), not 0 ns; pbench divides what is sent."""
        from pbench_wrap import relay
        job = relay.Job(None, 0, True)
        key = (100, 1)
        loader = job.loaders[key] = relay.Loader(key, {})
        job.measured, job.window = key, [0, 10 ** 9]
        job.count_worker(loader, 0, 8, 0, 0, b"", 10)  # no columns: not timed
        row = job.workers_rows()[0]
        self.assertIsNone(row["cpu_ns"])
        self.assertNotIn("cpu_ns_per_sample", row)
