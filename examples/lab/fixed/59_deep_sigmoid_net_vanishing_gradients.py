"""Pitfall: a deep plain network of sigmoids, whose gradients vanish before the first layers.

Twelve `Linear` + `Sigmoid` layers with no normalisation and no skip connection: each sigmoid
passes back at most a quarter of the gradient, each default-initialised layer shrinks it again,
and the first layers get gradients about a hundred thousand times smaller than the last ones.
They barely move, whatever the learning rate.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class DeepClassifier(nn.Module):
    def __init__(self, features=16, hidden=64, depth=12, classes=4):
        super().__init__()
        layers = [nn.Linear(features, hidden), nn.LayerNorm(hidden), nn.ReLU()]
        for _ in range(depth - 1):
            layers += [nn.Linear(hidden, hidden), nn.LayerNorm(hidden), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


def make_data(n=512, features=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    return x, y


def make():
    torch.manual_seed(0)
    model = DeepClassifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


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
            if step % 20 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
