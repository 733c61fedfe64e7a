"""Pitfall: an nn.LSTM built without batch_first=True, fed (batch, time, features) batches.

nn.LSTM reads dim 0 as time unless told otherwise. Fed a (32, 20, 8) batch it runs 32 time
steps over a "batch" of 20 and mixes the samples of the batch into one sequence; reading
`out[:, -1]` then gives 32 rows, so the shapes still match the targets and nothing fails.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 3


class SequenceClassifier(nn.Module):
    def __init__(self, features=8, hidden=32, classes=NUM_CLASSES):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def make_data(n=512, steps=20, features=8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, steps, features, generator=gen)
    y = (x[:, :, 0].sum(dim=1) > 0).long() + (x[:, -1, 1] > 1).long()
    return x, y


def make():
    torch.manual_seed(0)
    model = SequenceClassifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(epochs=8):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}")
    return loss.item()


if __name__ == "__main__":
    train()
