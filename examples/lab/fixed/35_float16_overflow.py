"""Pitfall: float16 overflows past 65504.

The model was cast to float16 (`model.half()`) to save memory. Its features are sums of
squares that reach a few hundred thousand, past float16's largest value (65504): they become
inf and the loss NaN. bfloat16 has float32's range (or keep this part in float32).
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 3


class Energy(nn.Module):
    def __init__(self, features=16, classes=NUM_CLASSES):
        super().__init__()
        self.proj = nn.Linear(features, 32)
        self.head = nn.Linear(1, classes)

    def forward(self, x):
        energy = (self.proj(x).float() ** 2).sum(dim=1, keepdim=True)
        return self.head((energy.sqrt() / 1000).half()).float()


def make_data(n=256, features=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(n, features, generator=gen) * 200).half()  # raw sensor values
    y = torch.randint(0, NUM_CLASSES, (n,), generator=gen)
    return x, y


def make():
    torch.manual_seed(0)
    model = Energy().half()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=32, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
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
            if step % 20 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
