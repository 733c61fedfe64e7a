"""Pitfall: view() instead of transpose() to make a batch-first tensor sequence-first.

nn.LSTM without batch_first=True expects (length, batch, features). x.view(length, batch,
features) has the right shape but scrambles the data: each "sequence" the LSTM sees is made of
pieces of several samples, so every prediction depends on the other samples in the batch.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 3


class SequenceClassifier(nn.Module):
    def __init__(self, features=8, hidden=32, classes=NUM_CLASSES):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden)  # sequence-first: (length, batch, features)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):  # x: (batch, length, features)
        batch, length, features = x.shape
        seq = x.view(length, batch, features)
        out, _ = self.lstm(seq)
        return self.head(out[-1])


def make_data(n=256, length=12, features=8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, length, features, generator=gen)
    y = (x.mean(dim=1) @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    return x, y


def make():
    torch.manual_seed(0)
    model = SequenceClassifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=16, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=200):
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
            if step % 50 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
