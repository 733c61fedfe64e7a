"""Pitfall: the gradient of sqrt at 0 is infinite.

A prototype layer measures the Euclidean distance from each sample to learned prototypes,
`torch.sqrt(((x - p) ** 2).sum(-1))`, with the prototypes initialised from training samples
(a common start). The loss is finite, but a sample that sits exactly on a prototype has
distance 0, and the gradient of sqrt there is infinite: the step fills the weights with NaN.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


class PrototypeNet(nn.Module):
    def __init__(self, samples, classes=NUM_CLASSES):
        super().__init__()
        self.prototypes = nn.Parameter(samples.clone())
        self.head = nn.Linear(len(samples), classes)

    def forward(self, x):
        distance = torch.sqrt(((x[:, None, :] - self.prototypes[None]) ** 2).sum(dim=2) + 1e-8)
        return self.head(-distance)


def make_data(n=256, features=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    return x, y


def make():
    torch.manual_seed(0)
    model = PrototypeNet(make_data()[0][:16])
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=60):
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
