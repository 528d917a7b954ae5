"""The engine's processes die with their parent (pbench_torch/lifeline.py):
a process that asked for it is SIGKILLed when the process that started it
ends, and a worker whose engine is already gone exits at once."""
import os
import select
import signal
import sys
import time
import unittest

from pbench_torch import lifeline


def gone(pid, limit_s=5.0):
    """Whether pid ended (gone, or a zombie) within limit_s."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


class LifelineTest(unittest.TestCase):
    def test_dies_with_its_parent(self):
        """A middle process starts a child that asks for SIGKILL with its
        parent and sleeps; the middle one is SIGKILLed; the child ends."""
        read_end, write_end = os.pipe()
        middle = os.fork()
        if middle == 0:
            child = os.fork()
            if child == 0:
                lifeline.kill_me_with_parent()
                os.write(write_end, b"%d\n" % os.getpid())
                time.sleep(60)
                os._exit(0)
            time.sleep(60)
            os._exit(0)
        os.close(write_end)
        select.select([read_end], [], [], 30)
        child = int(os.read(read_end, 64).split()[0])
        os.close(read_end)
        os.kill(middle, signal.SIGKILL)
        os.waitpid(middle, 0)
        ended = gone(child)
        if not ended:
            os.kill(child, signal.SIGKILL)
        self.assertTrue(ended, "the child outlived its parent")

    def test_worker_of_a_gone_engine_exits(self):
        """A worker_init_fn for an engine that is not its parent exits."""
        pid = os.fork()
        if pid == 0:
            lifeline.EndWithEngine(os.getppid() + 1000000)(0)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.WEXITSTATUS(status), 1)

    def test_where_stuck_needs_a_sample(self):
        """Outside a sample being loaded (an idle worker, the loop), a
        process says nothing on SIGUSR1 (tests/test_stop.c has one that is
        inside a Dataset's __getitem__)."""
        self.assertIsNone(lifeline.where_stuck(sys._getframe()))


if __name__ == "__main__":
    unittest.main()
