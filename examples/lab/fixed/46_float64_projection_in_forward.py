"""Pitfall: a float64 tensor made with NumPy inside a float32 model, and casts added around it.

The model mixes its hidden features through a fixed random projection built with NumPy, which
is float64. Multiplying float32 activations by it raised "expected m1 and m2 to have the same
dtype", so `.double()` and `.float()` were added around the product: it trains, the loss and
every parameter are float32, and the biggest matrix product of the step (and its backward)
runs in float64, many times slower on a GPU.
"""

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class RandomFeatures(nn.Module):
    def __init__(self, features=32, hidden=256, seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.body = nn.Linear(features, hidden)
        self.register_buffer("projection", torch.from_numpy(rng.standard_normal((hidden, hidden)) / hidden**0.5).float())
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        h = torch.relu(self.body(x))
        h = h @ self.projection
        return self.head(torch.relu(h))


def make():
    torch.manual_seed(0)
    x = torch.randn(1024, 32)
    y = (x[:, :4].sum(dim=1, keepdim=True) > 0).float()
    model = RandomFeatures()
    loader = DataLoader(TensorDataset(x, y), batch_size=128, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return {"model": model, "data": loader, "loss_fn": nn.BCEWithLogitsLoss(), "optimizer": optimizer}


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
