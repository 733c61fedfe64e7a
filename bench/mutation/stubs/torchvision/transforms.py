"""The transforms the corpus uses, on the stub's images (uint8 tensors) and on tensors."""

import torch
import torch.nn.functional as F
from td_synthetic_images import Image


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class ToTensor:
    def __call__(self, image):
        if isinstance(image, Image):
            return image.pixels.float().div(255)
        return torch.as_tensor(image)


class PILToTensor:
    def __call__(self, image):
        return image.pixels.clone()


class Normalize:
    def __init__(self, mean, std, inplace=False):
        self.mean = torch.as_tensor(mean, dtype=torch.float32).view(-1, 1, 1)
        self.std = torch.as_tensor(std, dtype=torch.float32).view(-1, 1, 1)

    def __call__(self, x):
        return (x - self.mean) / self.std


def _resize(x, size):
    if isinstance(size, int):
        size = (size, size)
    if isinstance(x, Image):
        return Image(_resize(x.pixels.float(), size).round().clamp(0, 255).to(torch.uint8))
    return F.interpolate(x.unsqueeze(0), size=tuple(size), mode="bilinear", align_corners=False)[0]


class Resize:
    def __init__(self, size, *_, **__):
        self.size = size

    def __call__(self, x):
        if isinstance(self.size, int):
            h, w = (x.pixels if isinstance(x, Image) else x).shape[-2:]
            short = min(h, w)
            return _resize(x, (h * self.size // short, w * self.size // short))
        return _resize(x, self.size)


class _Crop:
    def __init__(self, size, *_, **__):
        self.size = (size, size) if isinstance(size, int) else tuple(size)

    def __call__(self, x):
        t = x.pixels if isinstance(x, Image) else x
        h, w = t.shape[-2:]
        ch, cw = self.size
        if ch > h or cw > w:
            return _resize(x, self.size)
        top, left = (h - ch) // 2, (w - cw) // 2
        out = t[..., top:top + ch, left:left + cw]
        return Image(out) if isinstance(x, Image) else out


CenterCrop = RandomCrop = _Crop


class RandomResizedCrop:
    def __init__(self, size, *_, **__):
        self.size = size

    def __call__(self, x):
        return _resize(x, self.size)


class _Identity:
    def __init__(self, *_, **__):
        pass

    def __call__(self, x):
        return x


RandomHorizontalFlip = RandomVerticalFlip = RandomRotation = ColorJitter = Pad = _Identity


class Grayscale:
    def __init__(self, num_output_channels=1):
        self.n = num_output_channels

    def __call__(self, x):
        t = x.pixels.float() if isinstance(x, Image) else x
        g = t.mean(0, keepdim=True).expand(self.n, -1, -1)
        return Image(g.to(torch.uint8)) if isinstance(x, Image) else g


class Lambda:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, x):
        return self.fn(x)
