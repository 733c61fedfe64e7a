"""Pitfall: a Python value that changes every step recompiles a compiled function.

The compiled loss takes the name of the current schedule phase as a string, which changes every
step. Dynamo guards on the string's value, so each step compiles the function again, until the
recompile limit (8) is hit and it silently runs without compilation.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


class Classifier(nn.Module):
    def __init__(self, features=16, classes=NUM_CLASSES):
        super().__init__()
        self.fc = nn.Linear(features, classes)

    def forward(self, x):
        return self.fc(x)


@torch.compile
def weighted_cross_entropy(logits, labels, weight):
    return nn.functional.cross_entropy(logits, labels) * weight


class PhasedLoss:
    def __init__(self):
        self.step = 0

    def __call__(self, logits, labels):
        self.step += 1
        return weighted_cross_entropy(logits, labels, torch.tensor(1.0 + len(f"warmup-{self.step}") / 100))


def make_data(n=512, features=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    return x, y


def make():
    torch.manual_seed(0)
    model = Classifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return {"model": model, "data": loader, "loss_fn": PhasedLoss(), "optimizer": optimizer}


def train(steps=20):
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
            if step % 10 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
