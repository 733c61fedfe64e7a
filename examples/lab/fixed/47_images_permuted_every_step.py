"""Pitfall: images kept as decoded (N, H, W, C) and made channels-first in every step.

The dataset holds the images the way they were decoded, height, width, channels. The model
wants channels first, so the training step permutes each batch and calls `.contiguous()`:
every step gathers the whole batch, element by element, into new memory, which takes longer
than the model itself. Permuting the images once, when the dataset is built, costs the same
copy once.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


def make_images(n=256, size=128, seed=0):
    """Stands in for images decoded to (H, W, C) arrays, with a colour that encodes the class."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, NUM_CLASSES, (n,), generator=gen)
    images = torch.rand(n, size, size, 3, generator=gen)
    images[..., 0] += labels.float().view(n, 1, 1) / NUM_CLASSES
    return images, labels


def make():
    torch.manual_seed(0)
    images, labels = make_images()
    images = images.permute(0, 3, 1, 2).contiguous()  # once: N, C, H, W
    model = nn.Sequential(
        nn.AvgPool2d(8), nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(8, NUM_CLASSES),
    )
    loader = DataLoader(TensorDataset(images, labels), batch_size=64, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=200):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    step = 0
    while step < steps:
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            step += 1
            if step % 50 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
