"""Pitfall: parameters frozen after warm-up still decay under AdamW.

Optimizers skip parameters whose .grad is None, not parameters that are frozen. This code
resets gradients with zero_grad(set_to_none=False), so the frozen body keeps a zero .grad
tensor, and AdamW's weight decay shrinks it on every step.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


class Classifier(nn.Module):
    def __init__(self, features=20, hidden=64, classes=NUM_CLASSES):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


def make_data(n=512, features=20, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    return x, y


def run_steps(model, loader, loss_fn, optimizer, steps):
    step = 0
    while step < steps:
        for x, y in loader:
            optimizer.zero_grad(set_to_none=False)
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            step += 1
            if step == steps:
                return loss.item()
    return None


def make():
    torch.manual_seed(0)
    model = Classifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    run_steps(model, loader, loss_fn, optimizer, steps=20)  # warm up every layer
    model.body.requires_grad_(False)  # then fine-tune the head only
    return {"model": model, "data": loader, "loss_fn": loss_fn, "optimizer": optimizer}


def train(steps=300):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    model.train()
    before = model.body[0].weight.detach().clone()
    loss = run_steps(model, loader, loss_fn, optimizer, steps)
    drift = (model.body[0].weight - before).abs().max().item()
    print(f"loss {loss:.4f}; frozen body moved by up to {drift:.2e}")
    return loss


if __name__ == "__main__":
    train()
