"""Pitfall: a 95/5 class split trained with a plain cross-entropy.

One sample in twenty is positive. With no class weights and batches drawn plainly, the loss is
dominated by the negatives: predicting "negative" for everything already gives 95% accuracy and
a low loss, and the positives, the class that matters, are learned late or not at all. Nothing
fails, and the accuracy printed looks fine.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

#: the classes are counted over the first 500 samples or more (8 batches of 64)
STEPS_TO_SHOW = 10


class Detector(nn.Module):
    def __init__(self, features=16, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, 2))

    def forward(self, x):
        return self.net(x)


def make_data(n=2048, features=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    y = (torch.rand(n, generator=gen) < 0.05).long()
    x = torch.randn(n, features, generator=gen) + 0.5 * y[:, None]
    return x, y


def make():
    torch.manual_seed(0)
    model = Detector()
    x, y = make_data()
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
    counts = torch.bincount(y, minlength=2).float()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss(weight=len(y) / (2 * counts))  # each class weighs as much in the loss
    return {"model": model, "data": loader, "loss_fn": loss_fn, "optimizer": optimizer}


def train(steps=STEPS_TO_SHOW):
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
