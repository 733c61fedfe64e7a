"""Pitfall: regression output of shape (N, 1) against targets of shape (N,).

MSELoss broadcasts (N, 1) against (N,) to an (N, N) matrix: every prediction is compared with
every target, and the model learns to predict the mean. PyTorch only emits a UserWarning.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(nn.Module):
    def __init__(self, features=8, hidden=32):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.head(self.body(x)).squeeze(-1)


def make_data(n=512, features=8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = x @ torch.randn(features, generator=gen) + 0.1 * torch.randn(n, generator=gen)
    return x, y


def make():
    torch.manual_seed(0)
    model = Regressor()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return {"model": model, "data": loader, "loss_fn": nn.MSELoss(), "optimizer": optimizer}


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
