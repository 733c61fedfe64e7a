"""Pitfall: a learning rate so large that it kills most ReLU units.

`lr=3.0` with momentum makes the first updates so large that the second hidden layer's
pre-activations are pushed below zero for every input: its ReLU outputs zero for the whole batch,
no gradient flows back through those units, and they never recover. Nothing raises and the loss
is not NaN; it just settles near the chance level, ln(4) = 1.39.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

#: the units die over the first dozens of steps, and must stay dead over several samples
STEPS_TO_SHOW = 40


class Classifier(nn.Module):
    def __init__(self, features=16, hidden=64, classes=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)


def make_data(n=512, features=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    return x, y


def make():
    torch.manual_seed(0)
    model = Classifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=STEPS_TO_SHOW):
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
