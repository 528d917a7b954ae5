"""A training job whose samples are cheap, for what pbench wrap's per-sample
timing costs (docs/wrap.md, "Overhead"): a Dataset of small tensors through
a Compose of five cheap transforms, 2 workers, batches of 64, a trivial step;
it prints its own steps/s. The argument is how long it runs, in seconds."""
import sys, time, torch
from torch.utils.data import Dataset, DataLoader
import torchvision.transforms as T

class Small(Dataset):
    def __init__(self):
        self.t = T.Compose([T.RandomHorizontalFlip(), T.RandomVerticalFlip(), T.ConvertImageDtype(torch.float32),
                            T.Normalize([0.5] * 3, [0.2] * 3), T.RandomErasing(p=0.0)])
        self.base = torch.randint(0, 255, (3, 16, 16), dtype=torch.uint8)
    def __len__(self): return 4096
    def __getitem__(self, i): return self.t(self.base), i % 10

def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10
    loader = DataLoader(Small(), batch_size=64, num_workers=2, shuffle=True)
    end = time.monotonic() + seconds
    steps = 0
    t0 = time.monotonic()
    while time.monotonic() < end:
        for x, y in loader:
            x.sum().item()
            steps += 1
            if time.monotonic() >= end:
                break
    print("steps/s %.2f" % (steps / (time.monotonic() - t0)), file=sys.stderr)

if __name__ == "__main__":
    main()
