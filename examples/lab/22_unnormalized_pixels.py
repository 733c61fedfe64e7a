"""Pitfall: raw 0..255 pixel values fed to the network.

Inputs hundreds of times larger than the initialisation assumes give huge logits: the first
loss is far above ln(C) (the loss of an uninformed C-class guess), the softmax saturates and
training is slow and unstable.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 10


class ConvNet(nn.Module):
    def __init__(self, classes=NUM_CLASSES):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Linear(16 * 4 * 4, classes)

    def forward(self, images):
        return self.head(self.features(images).flatten(1))


def make_images(n=256, seed=0):
    """Stands in for uint8 images read from disk (16x16, one channel)."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, NUM_CLASSES, (n,), generator=gen)
    images = torch.randint(0, 256, (n, 1, 16, 16), generator=gen, dtype=torch.uint8)
    images[torch.arange(n), 0, labels, :] = 255  # a bright row encodes the class
    return images, labels


def make():
    torch.manual_seed(0)
    images, labels = make_images()
    x = images.float()
    model = ConvNet()
    loader = DataLoader(TensorDataset(x, labels), batch_size=32, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=200):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    model.train()
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
