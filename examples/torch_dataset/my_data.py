"""A Dataset of the kind training scripts hold: a list of (path, label)
built from a folder of JPEGs, PIL decode, torchvision transforms.

configs/torch-dataset.yaml runs it on pbench's torch engine:
dataset.python "my_data:make_dataset" is called with dataset.args as
keyword arguments, and each transform of its Compose is timed as a stage
row of its own (RandomResizedCrop, RandomHorizontalFlip, ToTensor,
Normalize)."""
import os
import zlib

from PIL import Image
from torch.utils.data import Dataset
from torchvision import transforms

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")
IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]


class ImageFolderList(Dataset):
    """Every image under root, sorted, labelled by its subfolder when it
    has one, else by a hash of its name (classes labels)."""

    def __init__(self, root, transform=None, classes=1000):
        self.root = root
        self.transform = transform
        self.samples = []
        for folder, _, files in sorted(os.walk(root)):
            for name in sorted(files):
                if name.lower().endswith(IMAGE_EXTENSIONS):
                    path = os.path.join(folder, name)
                    self.samples.append((path, self.label_of(path, classes)))

    def label_of(self, path, classes):
        folder = os.path.relpath(os.path.dirname(path), self.root)
        key = folder if folder != "." else os.path.basename(path)
        return zlib.crc32(key.encode()) % classes

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, label = self.samples[index]
        with open(path, "rb") as f:
            image = Image.open(f).convert("RGB")
        if self.transform is not None:
            image = self.transform(image)
        return image, label


def make_dataset(root, size=224, classes=1000):
    """The training set: random resized crops of size, flipped, normalized."""
    transform = transforms.Compose([
        transforms.RandomResizedCrop(size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD),
    ])
    return ImageFolderList(root, transform, classes)
