"""Pitfall: a model the optimizer trains, called under torch.no_grad() in the training step.

The encoder's parameters are given to the optimizer, but its forward pass runs under
no_grad (copied from the validation code): its output has no autograd history, backward()
stops at the head, and the encoder keeps its random weights. The loss still goes down, since
the head learns on top of random features, so nothing looks broken.
(`torchdoctor check` trains its own step on `make()`'s model and does not see the loop.)
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


def make_data(n=1024, features=20, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = ((x[:, 0] * x[:, 1] > 0).long() * 2 + (x[:, 2] > x[:, 3]).long()) % NUM_CLASSES
    return x, y


def make():
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 16), nn.ReLU())
    head = nn.Linear(16, NUM_CLASSES)
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), lr=3e-3)
    return {"model": nn.Sequential(encoder, head), "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(epochs=15):
    setup = make()
    (encoder, head), loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    for epoch in range(epochs):
        for x, y in loader:
            features = encoder(x)
            loss = loss_fn(head(features), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}")
    return loss.item()


if __name__ == "__main__":
    train()
