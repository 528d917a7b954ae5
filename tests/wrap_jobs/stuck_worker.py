"""A job whose DataLoader worker is stuck for good (tests/test_wrap.c): sample 40
never returns, after its worker wrote its pid to PID_FILE. Usage:
stuck_worker.py PID_FILE"""
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Stuck(Dataset):
    def __len__(self):
        return 1000

    def __getitem__(self, i):
        if i == 40:
            with open(sys.argv[1] + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename(sys.argv[1] + ".tmp", sys.argv[1])
            time.sleep(3600)
        return torch.tensor([i])


for batch in DataLoader(Stuck(), batch_size=4, num_workers=1, timeout=3600):
    time.sleep(0.01)
