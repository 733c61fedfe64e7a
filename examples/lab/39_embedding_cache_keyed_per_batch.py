"""Pitfall: a cache keyed per batch keeps every batch's embeddings with their autograd graph.

The loop keeps each batch's embeddings for a projection plot at the end of training, in a dict
keyed by the step. They are computed with autograd on and never backpropagated, so each entry
keeps its whole graph alive, with the activations its forward pass saved for a backward that
never comes: memory grows by a forward pass's activations at every step.
(`torchdoctor check` does not see the training loop; run does.)
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


class Classifier(nn.Module):
    def __init__(self, features=32, hidden=256, classes=NUM_CLASSES):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


def make_data(n=1024, features=32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    return x, y


def make():
    torch.manual_seed(0)
    model = Classifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=64, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=300):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    embeddings = {}
    model.train()
    step = 0
    while step < steps:
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            embeddings[step] = model.body(x)  # for the projection plot at the end
            step += 1
            if step % 100 == 0:
                print(f"step {step}: loss {loss.item():.4f}, {len(embeddings)} batches of embeddings kept")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
