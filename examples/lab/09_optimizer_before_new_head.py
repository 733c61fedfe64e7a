"""Pitfall: the optimizer is built before the classification head is replaced.

The optimizer keeps references to the parameters it was given. The new head gets gradients
but is never updated: it stays at its random initialisation while the backbone trains.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 5


class Network(nn.Module):
    def __init__(self, features=20, hidden=64, classes=1000):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc(self.backbone(x))


def make_data(n=512, features=20, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    return x, y


def make():
    torch.manual_seed(0)
    model = Network()  # stands in for a pretrained network with a 1000-class head
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model.fc = nn.Linear(64, NUM_CLASSES)  # new head for our 5 classes
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
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
