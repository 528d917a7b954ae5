"""A job that forks while another of its threads sends batches (tests/test_wrap.c):
one thread iterates a 0-worker DataLoader without pause while the main
thread starts a 1-worker DataLoader each epoch, a fork each time. Under
pbench wrap it must run to its end, as without. Usage: fork_thread.py
EPOCHS; a worker that hangs fails the job after 60 s (DataLoader timeout)."""
import sys
import threading

import torch
from torch.utils.data import DataLoader, Dataset


class Numbers(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.tensor([i])


stop = threading.Event()


def sender():
    while not stop.is_set():
        for _ in DataLoader(Numbers(), batch_size=1, num_workers=0):
            if stop.is_set():
                break


epochs = int(sys.argv[1])
thread = threading.Thread(target=sender, daemon=True)
thread.start()
for epoch in range(epochs):
    for batch in DataLoader(Numbers(), batch_size=8, num_workers=1, timeout=60):
        pass
stop.set()
thread.join()
print("fork_thread.py ran %d epochs" % epochs)
