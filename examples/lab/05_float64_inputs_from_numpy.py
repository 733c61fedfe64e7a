"""Pitfall: float64 features from NumPy fed to a float32 model.

NumPy defaults to float64 and torch.from_numpy keeps it. The first Linear layer then raises
"mat1 and mat2 must have the same dtype, but got Double and Float" (and where the model is
converted to match, everything runs many times slower on a GPU).
"""

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 3


class Classifier(nn.Module):
    def __init__(self, features=8, hidden=32, classes=NUM_CLASSES):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


def load_table(n=512, features=8, seed=0):
    """Stands in for pandas.read_csv(...).to_numpy(): a float64 array and integer labels."""
    rng = np.random.default_rng(seed)
    table = rng.normal(size=(n, features))
    labels = (table @ rng.normal(size=(features, NUM_CLASSES))).argmax(axis=1)
    return table, labels


def make():
    torch.manual_seed(0)
    table, labels = load_table()
    x = torch.from_numpy(table)
    y = torch.from_numpy(labels)
    model = Classifier()
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
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
