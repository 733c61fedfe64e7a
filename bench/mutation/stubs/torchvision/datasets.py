"""Synthetic stand-ins for the torchvision data sets the corpus uses (same shapes, small sizes)."""

import torch

from ._images import LabelledImages, size


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
        from ._images import size as cap
        super().__init__(min(size, cap(True)), image_size, num_classes, 6 + random_offset,
                         transform, target_transform)


class ImageFolder(LabelledImages):
    def __init__(self, root=None, transform=None, target_transform=None, **_):
        super().__init__(size(True), (3, 64, 64), 10, 8, transform, target_transform)
        self.classes = [str(i) for i in range(10)]
