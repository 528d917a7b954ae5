"""A job that leaves processes behind (tests/test_wrap.c): a `sleep 45` in its
session and a double-forked, setsid `sleep 46` grandchild, their pids in
PID_FILE (one a line); then BATCHES batches of a 1-worker DataLoader, and
its main process ends. Usage: leaves_helpers.py PID_FILE BATCHES"""
import os
import subprocess
import sys

import torch
from torch.utils.data import DataLoader, Dataset

pids = [subprocess.Popen(["sleep", "45"]).pid]
read, write = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(write, b"%d\n" % os.getpid())
        os.execvp("sleep", ["sleep", "46"])
    os._exit(0)
os.close(write)
pids.append(int(os.read(read, 64)))
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("".join("%d\n" % pid for pid in pids))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])


class Numbers(Dataset):
    def __len__(self):
        return 4 * int(sys.argv[2])

    def __getitem__(self, i):
        return torch.tensor([i])


for batch in DataLoader(Numbers(), batch_size=4, num_workers=1):
    pass
print("leaves_helpers.py: main process done")
