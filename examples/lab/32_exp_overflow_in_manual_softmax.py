"""Pitfall: a softmax written by hand overflows.

`exp(logits) / exp(logits).sum()` is the textbook formula, but exp overflows float32 above
88.7: once the logits grow, exp gives inf, inf / inf gives NaN, and the loss is NaN.
`torch.softmax` subtracts the maximum first and never overflows.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 5


class Classifier(nn.Module):
    def __init__(self, features=10, classes=NUM_CLASSES):
        super().__init__()
        self.fc = nn.Linear(features, classes)

    def forward(self, x):
        scores = torch.exp(self.fc(x))
        return scores / scores.sum(dim=1, keepdim=True)


def nll_of_probabilities(probabilities, labels):
    return -torch.log(probabilities.gather(1, labels[:, None]) + 1e-12).mean()


def make_data(n=512, features=10, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen) * 100  # raw, unnormalised features
    y = (x @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    return x, y


def make():
    torch.manual_seed(0)
    model = Classifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    return {"model": model, "data": loader, "loss_fn": nll_of_probabilities, "optimizer": optimizer}


def train(steps=100):
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
            if step % 25 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
