"""Pitfall: a distance written as `sqrt` of a sum of squares, over all pairs, diagonal included.

An encoder is trained with a contrastive loss written as a plain function: pairs of samples of
the same class are pulled together, the others pushed beyond a margin. The distances of every
pair are `diff.pow(2).sum(-1).sqrt()`, and the diagonal (each sample with itself) is 0, where
the gradient of sqrt is infinite. The loss stays finite, the gradients are NaN at the first
step, and the weights are NaN after it. `torch.cdist`, or an epsilon inside the root, is safe.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4
MARGIN = 1.0


def contrastive_loss(z, y):
    diff = z[:, None, :] - z[None, :, :]
    dist = diff.pow(2).sum(-1).sqrt()
    same = (y[:, None] == y[None, :]).float()
    return (same * dist.pow(2) + (1 - same) * torch.relu(MARGIN - dist).pow(2)).mean()


def make_data(n=256, features=10, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    return x, y


def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 8))
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    return {"model": model, "data": loader, "loss_fn": contrastive_loss, "optimizer": optimizer}


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
