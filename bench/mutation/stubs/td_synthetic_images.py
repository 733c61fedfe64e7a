"""Synthetic labelled images: a fixed pattern per class plus noise, drawn from a private generator,
and the torchvision data sets the corpus uses made of them (same shapes, small sizes).

A top-level module (not inside the torchvision stand-in) so that the real torchvision, where it
imports, can take these data sets too (torchvision/__init__.py); their items are then PIL images,
as the real data sets' are, for the real transforms.
"""

import os

import torch

#: set by the torchvision stand-in when it hands over to the real torchvision
REAL = False


def _pil(pixels):
    """A (C, H, W) uint8 tensor as the PIL image a real torchvision data set gives."""
    from PIL import Image as PIL

    array = pixels.permute(1, 2, 0).numpy()
    return PIL.fromarray(array[:, :, 0] if array.shape[2] == 1 else array)  # uint8: mode L or RGB


def size(train: bool) -> int:
    name = "TD_MUTATION_TRAIN_SIZE" if train else "TD_MUTATION_TEST_SIZE"
    return int(os.environ.get(name, "1024" if train else "256"))


_samples = size  # the data sets whose own argument is named `size`


class Image:
    """What a PIL image is to the stub transforms: a uint8 (C, H, W) tensor and its mode."""

    def __init__(self, pixels: torch.Tensor):
        self.pixels = pixels
        self.mode = "L" if pixels.shape[0] == 1 else "RGB"

    @property
    def size(self):
        return (self.pixels.shape[2], self.pixels.shape[1])

    def convert(self, mode):
        if mode == "L" and self.pixels.shape[0] == 3:
            return Image(self.pixels.float().mean(0, keepdim=True).to(torch.uint8))
        if mode == "RGB" and self.pixels.shape[0] == 1:
            return Image(self.pixels.expand(3, -1, -1).clone())
        return self


class LabelledImages:
    """`count` images of `shape` (C, H, W) in `classes` classes; item i is the same every time."""

    def __init__(self, count, shape, classes, seed, transform=None, target_transform=None):
        self._count = count
        self._shape = tuple(shape)
        self._classes = classes
        self._seed = seed
        self.transform = transform
        self.target_transform = target_transform
        g = torch.Generator().manual_seed(seed)
        self._patterns = torch.rand((classes,) + self._shape, generator=g)
        self.targets = torch.randint(0, classes, (count,), generator=g)

    def __len__(self):
        return self._count

    def pixels(self, index):
        g = torch.Generator().manual_seed(self._seed * 100003 + index)
        label = int(self.targets[index])
        noise = torch.rand(self._shape, generator=g)
        return ((0.7 * self._patterns[label] + 0.3 * noise) * 255).to(torch.uint8)

    def __getitem__(self, index):
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(index)
        pixels = self.pixels(index)
        image = _pil(pixels) if REAL else Image(pixels)
        target = int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target


class _Classification(LabelledImages):
    SHAPE = (1, 28, 28)
    CLASSES = 10
    SEED = 1

    def __init__(self, root=None, train=True, transform=None, target_transform=None, download=False, **_):
        super().__init__(size(train), self.SHAPE, self.CLASSES, self.SEED + (0 if train else 7),
                         transform, target_transform)
        self.root = root
        self.train = train
        self.classes = [str(i) for i in range(self.CLASSES)]

    @property
    def data(self):
        return torch.stack([self.pixels(i)[0] if self.SHAPE[0] == 1 else self.pixels(i).permute(1, 2, 0)
                            for i in range(len(self))])

    @property
    def train_labels(self):
        return self.targets


class MNIST(_Classification):
    pass


class FashionMNIST(_Classification):
    SEED = 2


class KMNIST(_Classification):
    SEED = 3


class CIFAR10(_Classification):
    SHAPE = (3, 32, 32)
    SEED = 4


class CIFAR100(_Classification):
    SHAPE = (3, 32, 32)
    CLASSES = 100
    SEED = 5


class FakeData(LabelledImages):
    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None,
                 target_transform=None, random_offset=0):
        super().__init__(min(size, _samples(True)), image_size, num_classes, 6 + random_offset,
                         transform, target_transform)


class ImageFolder(LabelledImages):
    def __init__(self, root=None, transform=None, target_transform=None, **_):
        super().__init__(size(True), (3, 64, 64), 10, 8, transform, target_transform)
        self.classes = [str(i) for i in range(10)]


DATASETS = ["MNIST", "FashionMNIST", "KMNIST", "CIFAR10", "CIFAR100", "FakeData", "ImageFolder"]
