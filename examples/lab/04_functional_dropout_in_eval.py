"""Pitfall: F.dropout without training=self.training.

Functional dropout defaults to training=True and knows nothing about model.eval(): the model
keeps dropping half its activations at validation time, so validation scores are noisy and
worse than they should be, and two predictions for the same input differ.
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


class Classifier(nn.Module):
    def __init__(self, features=20, hidden=64, classes=NUM_CLASSES):
        super().__init__()
        self.body = nn.Linear(features, hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        h = torch.relu(self.body(x))
        h = F.dropout(h, p=0.5)
        return self.head(h)


def make_data(n=512, features=20, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    weights = torch.randn(features, NUM_CLASSES, generator=torch.Generator().manual_seed(1234))
    y = (x @ weights).argmax(dim=1)
    return x, y


def make():
    torch.manual_seed(0)
    model = Classifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def evaluate(model, x, y):
    model.eval()
    with torch.no_grad():
        accuracy = (model(x).argmax(dim=1) == y).float().mean().item()
    model.train()
    return accuracy


def train(steps=300):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    val_x, val_y = make_data(n=256, seed=1)
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
                print(f"step {step}: loss {loss.item():.4f}, val accuracy {evaluate(model, val_x, val_y):.3f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
