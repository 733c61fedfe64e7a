"""Pitfall: a softmax over a row that is entirely masked with -inf.

Attention scores are masked with `masked_fill(mask, -inf)` so that padding is ignored. A
sequence that is all padding has every score at -inf, and the softmax of a row of -inf is
NaN (0 / 0): the NaN spreads to the loss. Mask with the dtype's most negative finite value.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 3


class Pooler(nn.Module):
    def __init__(self, features=8, classes=NUM_CLASSES):
        super().__init__()
        self.score = nn.Linear(features, 1)
        self.head = nn.Linear(features, classes)

    def forward(self, x):
        padding = x.abs().sum(dim=2) == 0
        scores = self.score(x).squeeze(2).masked_fill(padding, float("-inf"))
        weights = torch.softmax(scores, dim=1)
        return self.head((weights[:, :, None] * x).sum(dim=1))


def make_data(n=256, length=6, features=8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, length, features, generator=gen)
    x[:, 4:] = 0.0  # padded positions
    x[::20] = 0.0  # empty sequences: everything is padding
    y = torch.randint(0, NUM_CLASSES, (n,), generator=gen)
    return x, y


def make():
    torch.manual_seed(0)
    model = Pooler()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=60):
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
            if step % 20 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
