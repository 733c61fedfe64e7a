"""Pitfall: a learning rate far too high for the loss's scale.

The targets are squared sums, in the thousands, and plain SGD runs with lr=0.3. Each update
overshoots, the next gradient is larger, and within a few dozen steps the gradient norm has
grown by orders of magnitude; a few steps later the loss is NaN.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


#: the gradient norm needs a few dozen steps to explode (for the lab's tests)
STEPS_TO_SHOW = 30


class Regressor(nn.Module):
    def __init__(self, features=8, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x)


def make_data(n=256, features=8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen) * 4
    y = x.sum(dim=1, keepdim=True) ** 2
    return x, y


def make():
    torch.manual_seed(0)
    model = Regressor()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=256, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    return {"model": model, "data": loader, "loss_fn": nn.MSELoss(), "optimizer": optimizer}


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
