"""Pitfall: a small view kept from every batch keeps the whole batch alive.

The loop keeps the first image of every batch for a progress gallery. `images[0]` is a view: it
shares the batch's storage, so each 12 KiB image keeps its whole 384 KiB batch in memory, and
the gallery grows 32 times faster than it looks.
(`torchdoctor check` does not see the training loop; run does.)
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 10


class SmallCNN(nn.Module):
    def __init__(self, classes=NUM_CLASSES):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(4))
        self.head = nn.Linear(8 * 8 * 8, classes)

    def forward(self, images):
        return self.head(self.features(images).flatten(1))


def make_data(n=512, seed=0):
    gen = torch.Generator().manual_seed(seed)
    images = torch.randn(n, 3, 32, 32, generator=gen)
    labels = (images.mean(dim=(2, 3)) @ torch.randn(3, NUM_CLASSES, generator=gen)).argmax(dim=1)
    return images, labels


def make():
    torch.manual_seed(0)
    model = SmallCNN()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=300):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    gallery = []
    model.train()
    step = 0
    while step < steps:
        for images, labels in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
            gallery.append(images[0])  # one example per batch for the progress gallery
            step += 1
            if step % 100 == 0:
                print(f"step {step}: loss {loss.item():.4f}, {len(gallery)} images in the gallery")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
