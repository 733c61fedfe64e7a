"""Pitfall: a workaround that turns oneDNN off, left around the whole training loop.

A `RuntimeError` from oneDNN (mkldnn) on one machine was worked around by training under
`torch.backends.mkldnn.flags(enabled=False)` (on a GPU, the same story is told with
`torch.backends.cudnn.flags(enabled=False)`). Nothing fails and the loss is the same: every
convolution, forward and backward, now runs in ATen's generic im2col kernel instead of
oneDNN's, and the step takes longer.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


def make_images(n=256, size=64, seed=0):
    """Synthetic images whose mean colour encodes the class."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, NUM_CLASSES, (n,), generator=gen)
    images = torch.rand(n, 3, size, size, generator=gen)
    images[:, 0] += labels.float().view(n, 1, 1) / NUM_CLASSES
    return images, labels


def make():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, NUM_CLASSES),
    )
    loader = DataLoader(TensorDataset(*make_images()), batch_size=8, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
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
