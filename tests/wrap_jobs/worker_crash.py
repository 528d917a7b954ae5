"""A job whose DataLoader worker segfaults mid-run (tests/test_wrap.c): samples
take 20 ms, the step 20 ms, 2 workers (input-bound); sample CRASH_AT kills
its worker with SIGSEGV. The job catches torch's error, spends 2 s on its
way out (a checkpoint) and exits 1. Usage: worker_crash.py CRASH_AT"""
import os
import signal
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

CRASH_AT = int(sys.argv[1])


class Slow(Dataset):
    def __len__(self):
        return 100000

    def __getitem__(self, i):
        if i == CRASH_AT:
            os.kill(os.getpid(), signal.SIGSEGV)
        time.sleep(0.02)
        return torch.tensor([i])


try:
    for batch in DataLoader(Slow(), batch_size=4, num_workers=2):
        time.sleep(0.02)
except RuntimeError as e:
    print("worker_crash.py: %s" % e)
    time.sleep(2.0)
    sys.exit(1)
