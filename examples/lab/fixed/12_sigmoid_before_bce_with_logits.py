"""Pitfall: sigmoid before BCEWithLogitsLoss.

BCEWithLogitsLoss applies the sigmoid itself. The sigmoid of a probability lies in
[0.5, 0.73], so even a perfect prediction costs about 0.31 and the gradients are weak: the
loss stalls, with no error.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Detector(nn.Module):
    def __init__(self, features=16, hidden=32):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.head(self.body(x)).squeeze(-1)


def make_data(n=512, features=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x @ torch.randn(features, generator=gen) > 0).float()
    return x, y


def make():
    torch.manual_seed(0)
    model = Detector()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return {"model": model, "data": loader, "loss_fn": nn.BCEWithLogitsLoss(), "optimizer": optimizer}


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
