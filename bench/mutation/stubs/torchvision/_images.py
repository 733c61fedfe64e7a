"""Synthetic labelled images: a fixed pattern per class plus noise, drawn from a private generator."""

import os

import torch


def size(train: bool) -> int:
    name = "TD_MUTATION_TRAIN_SIZE" if train else "TD_MUTATION_TEST_SIZE"
    return int(os.environ.get(name, "1024" if train else "256"))


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
        image = Image(self.pixels(index))
        target = int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target
