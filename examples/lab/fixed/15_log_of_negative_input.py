"""Pitfall: log() of an input that can be negative.

The features are standardised (zero mean), so about half are negative, and torch.log returns
NaN for them. The NaN reaches the loss and, after one optimizer step, every weight.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 3


class LogFeatureNet(nn.Module):
    def __init__(self, features=8, hidden=32, classes=NUM_CLASSES):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        h = torch.log(x.clamp_min(1e-6))
        return self.head(self.body(h))


def make_data(n=512, features=8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    amounts = torch.rand(n, features, generator=gen) * 100 + 1
    y = (amounts.log() @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    x = (amounts - amounts.mean(dim=0)) / amounts.std(dim=0)  # standardised
    return x, y


def make():
    torch.manual_seed(0)
    model = LogFeatureNet()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
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
