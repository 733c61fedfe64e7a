"""Pitfall: an attention layer appends its attention map to a list attribute at every forward.

`self.maps` was added to look at the attention maps after training. Each map still carries its
autograd graph and the list is never emptied: every forward pass adds a batch of attention maps,
and the graph nodes behind them, to the memory the model holds, until the process runs out.
(`torchdoctor check` does not see the growth over steps; run does.)
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


class Attention(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.query, self.key, self.value = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.last_map = None

    def forward(self, x):
        scores = self.query(x) @ self.key(x).transpose(1, 2) / x.shape[-1] ** 0.5
        weights = torch.softmax(scores, dim=-1)
        self.last_map = weights.detach()  # kept to look at after training
        return weights @ self.value(x)


class Classifier(nn.Module):
    def __init__(self, dim=32, classes=NUM_CLASSES):
        super().__init__()
        self.attention = Attention(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(self.attention(x).mean(dim=1))


def make_data(n=1024, tokens=16, dim=32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, tokens, dim, generator=gen)
    y = (x.mean(dim=1) @ torch.randn(dim, NUM_CLASSES, generator=gen)).argmax(dim=1)
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
    model.train()
    step = 0
    while step < steps:
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            step += 1
            if step % 100 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
