"""Pitfall: dividing by a norm that can be zero.

The embeddings are L2-normalised by hand, `e / e.norm(dim=1, keepdim=True)`. Padding rows are
all zeros, so their norm is 0 and 0 / 0 is NaN: the loss is NaN from the first batch with a
padding row. `F.normalize(e, dim=1)` divides by `max(norm, eps)`.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


class CosineClassifier(nn.Module):
    def __init__(self, features=12, classes=NUM_CLASSES):
        super().__init__()
        self.prototypes = nn.Parameter(torch.randn(classes, features))
        self.scale = 10.0

    def forward(self, x):
        e = nn.functional.normalize(x, dim=1)
        p = self.prototypes / self.prototypes.norm(dim=1, keepdim=True)
        return self.scale * e @ p.t()


def make_data(n=256, features=12, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    x[::16] = 0.0  # padding rows
    return x, y


def make():
    torch.manual_seed(0)
    model = CosineClassifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
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
