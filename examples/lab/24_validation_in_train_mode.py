"""Pitfall: validation under torch.no_grad() without switching the model to eval mode.

no_grad() turns off autograd, not training behaviour: dropout keeps dropping units and batch
norm normalises each validation batch with its own statistics and writes them into its
running averages. Validation numbers are noisy and too pessimistic, and the saved model
carries statistics of the validation data.
(`torchdoctor check` does not see the loop; lint and run do.)
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


class Classifier(nn.Module):
    def __init__(self, features=20, hidden=64, classes=NUM_CLASSES):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(0.3))
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


def validate(model, loader):
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(dim=1) == y).sum().item()
    return correct / len(loader.dataset)


def train(epochs=6):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    val_loader = DataLoader(TensorDataset(*make_data(n=256, seed=1)), batch_size=64)
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        first, second = validate(model, val_loader), validate(model, val_loader)
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}, val accuracy {first:.3f} then {second:.3f} (same weights)")
    return loss.item()


if __name__ == "__main__":
    train()
