"""Pitfall: gradient accumulation with zero_grad() before every backward().

The optimizer steps once every ACCUMULATION batches, but the gradients are reset before each
backward: every step sees the last micro-batch only. The effective batch is 4 times smaller
than intended, the loss is divided by 4 for nothing, and 3 backward passes in 4 are wasted.
(`torchdoctor check` does not see the loop; lint and run do.)
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4
ACCUMULATION = 4


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
    weights = torch.randn(features, NUM_CLASSES, generator=torch.Generator().manual_seed(1234))
    y = (x @ weights).argmax(dim=1)
    return x, y


def make():
    torch.manual_seed(0)
    model = Classifier()
    loader = DataLoader(TensorDataset(*make_data()), batch_size=8, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(epochs=3):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    for epoch in range(epochs):
        for i, (x, y) in enumerate(loader):
            loss = loss_fn(model(x), y) / ACCUMULATION
            loss.backward()
            if (i + 1) % ACCUMULATION == 0:
                optimizer.step()
                optimizer.zero_grad()
        print(f"epoch {epoch + 1}: loss {loss.item() * ACCUMULATION:.4f}")
    return loss.item()


if __name__ == "__main__":
    train()
