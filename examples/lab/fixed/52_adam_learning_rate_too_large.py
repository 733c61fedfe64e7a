"""Fixed: Adam at its usual learning rate, 1e-3: each step adjusts the weights by a small fraction of their size."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(nn.Module):
    def __init__(self, features=784, hidden=256, classes=10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x.flatten(1))


def make_data(n=1024, classes=10, seed=0):
    """Images of 28x28 pixels: a fixed pattern per class plus noise."""
    gen = torch.Generator().manual_seed(seed)
    patterns = torch.rand(classes, 1, 28, 28, generator=gen)
    y = torch.randint(0, classes, (n,), generator=gen)
    x = patterns[y] + 0.5 * torch.randn(n, 1, 28, 28, generator=gen)
    return x, y


def make():
    torch.manual_seed(0)
    model = Classifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=64, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=40):
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
