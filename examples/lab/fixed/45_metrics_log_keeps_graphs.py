"""Pitfall: a metrics logger keeps each step's loss tensor, and with it each step's autograd graph.

`metrics.log(loss=loss, ...)` stores the values to average them at the end. The loss is still a
tensor attached to its graph: the logger's list keeps every step's graph alive (its nodes, and
the tensors of the accuracy it was given), and grows with every step. The list is appended in a
method of the logger, not in the training loop, so nothing in the loop looks like it keeps tensors.
(`torchdoctor check` does not see the training loop; run does.)
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


class Classifier(nn.Module):
    def __init__(self, features=32, hidden=64, classes=NUM_CLASSES):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


class Metrics:
    """Keeps every step's values, to report their averages at the end."""

    def __init__(self):
        self.values = []

    def log(self, **values):
        self.values.append(values)

    def averages(self):
        return {name: sum(float(step[name]) for step in self.values) / len(self.values) for name in self.values[0]}


def make_data(n=1024, features=32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    return x, y


def make():
    torch.manual_seed(0)
    model = Classifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=64, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=300):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    metrics = Metrics()
    model.train()
    step = 0
    while step < steps:
        for x, y in loader:
            optimizer.zero_grad()
            logits = model(x)
            loss = loss_fn(logits, y)
            loss.backward()
            optimizer.step()
            metrics.log(loss=loss.item(), confidence=logits.softmax(dim=1).amax(dim=1).mean().item())
            step += 1
            if step == steps:
                break
    print(metrics.averages())
    return loss.item()


if __name__ == "__main__":
    train()
