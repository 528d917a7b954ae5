"""User code the tests load through dataset.python and `python` stages."""
import os

from PIL import Image
from torch.utils.data import Dataset
from torchvision import transforms


class Folder(Dataset):
    """JPEGs under root, labels from the file number, a Compose."""

    def __init__(self, root, size=16):
        self.samples = [(os.path.join(root, f), i % 3)
                        for i, f in enumerate(sorted(os.listdir(root)))]
        self.transform = transforms.Compose([
            transforms.Resize(size + 4), transforms.Resize(size + 2),
            transforms.CenterCrop(size), transforms.ToTensor()])

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, label = self.samples[index]
        with open(path, "rb") as f:
            image = Image.open(f).convert("RGB")
        return self.transform(image), label


class Plain(Folder):
    """The same without a Compose: one getitem column."""

    def __init__(self, root):
        super().__init__(root)
        self.transform = None

    def __getitem__(self, index):
        path, label = self.samples[index]
        return transforms.functional.to_tensor(Image.open(path).convert("RGB").resize((8, 8))), label


def make_folder(root, size=16):
    return Folder(root, size)


def invert(tensor):
    """A `python` stage: 1 - x."""
    return 1.0 - tensor


class Shapes(Dataset):
    """The same files, each sample shaped as `shape` says: "tensor"
    (a tensor first), "path" ((path, tensor)), "dict" ({"name", "image"}),
    "bytes" (the file's bytes) or "str" (its path)."""

    def __init__(self, root, shape="tensor"):
        self.files = [os.path.join(root, f) for f in sorted(os.listdir(root))]
        self.shape = shape

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        path = self.files[index]
        with open(path, "rb") as f:
            data = f.read()
        image = transforms.functional.to_tensor(Image.open(path).convert("RGB").resize((8, 8)))
        return {"tensor": lambda: image, "path": lambda: (path, image),
                "dict": lambda: {"name": path, "image": image}, "bytes": lambda: data,
                "str": lambda: path}[self.shape]()


def to_name(sample):
    """A `python` stage that returns a string."""
    return "a sample of %d fields" % len(sample)


NONE_ATTR = None  # exists, and is not a callable


def make_long_compose(root, transforms_count=39):
    """Folder with a Compose of transforms_count transforms (Resize, then
    identity Lambdas, then ToTensor)."""
    dataset = Folder(root)
    dataset.transform = transforms.Compose(
        [transforms.Resize(8)] + [transforms.Lambda(lambda x: x)] * (transforms_count - 2) +
        [transforms.ToTensor()])
    return dataset
