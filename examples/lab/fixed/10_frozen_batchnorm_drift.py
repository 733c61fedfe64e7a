"""Pitfall: a "frozen" backbone whose BatchNorm layers still update their statistics.

requires_grad_(False) stops gradients, not the running mean/variance update: every
model.train() puts the backbone's BatchNorm back in training mode, and each batch overwrites
the pretrained statistics. The frozen backbone silently drifts.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 3


class FineTuner(nn.Module):
    def __init__(self, features=16, hidden=32, classes=NUM_CLASSES):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(features, hidden), nn.BatchNorm1d(hidden), nn.ReLU())
        self.backbone.requires_grad_(False)  # pretrained: keep it fixed
        self.head = nn.Linear(hidden, classes)

    def train(self, mode=True):
        super().train(mode)
        self.backbone.eval()  # frozen: keep its batch-norm statistics
        return self

    def forward(self, x):
        return self.head(self.backbone(x))


def make_data(n=512, features=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen) * 3 + 1  # new domain: shifted statistics
    y = (x @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    return x, y


def make():
    torch.manual_seed(0)
    model = FineTuner()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(trainable, lr=1e-3)
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=300):
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
            if step % 100 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
