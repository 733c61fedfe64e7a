"""Pitfall: `.item()` inside a compiled forward breaks the graph.

The model is trained through `torch.compile`, and its forward keeps the batch's largest
activation for logging with `.item()`. Dynamo cannot trace a tensor turned into a Python
number: it splits the forward into two graphs with Python in between, on every step.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


class Classifier(nn.Module):
    def __init__(self, features=16, hidden=32, classes=NUM_CLASSES):
        super().__init__()
        self.body = nn.Linear(features, hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        h = torch.relu(self.body(x))
        self.largest_activation = h.abs().max().detach()  # kept for logging (read it after the step)
        return self.head(h)


def make_data(n=256, features=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    return x, y


def make():
    torch.manual_seed(0)
    model = Classifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=40):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    model = torch.compile(model)
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
