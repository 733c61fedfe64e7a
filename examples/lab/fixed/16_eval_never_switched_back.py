"""Pitfall: model.eval() for validation, never switched back to model.train().

eval() is sticky: after the first validation, dropout stays off for the rest of training (and
batch norm would stop updating its statistics). Nothing warns you.
(`torchdoctor check` does not see the training loop; lint and run do.)
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


class Classifier(nn.Module):
    def __init__(self, features=20, hidden=64, classes=NUM_CLASSES):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Dropout(0.3))
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


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


def validate(model, loss_fn, x, y):
    model.eval()
    with torch.no_grad():
        return loss_fn(model(x), y).item()


def train(epochs=15):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    val_x, val_y = make_data(n=256, seed=1)
    model.train()
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        if epoch % 5 == 4:
            print(f"epoch {epoch + 1}: loss {loss.item():.4f}, val loss {validate(model, loss_fn, val_x, val_y):.4f}")
    return loss.item()


if __name__ == "__main__":
    train()
