"""Pitfall: a dataset that retries a missing file with back-off, inside a DataLoader worker.

The dataset lists its files once and reads each on demand; a read that fails is retried after
a pause that doubles (the habit that suits a flaky network store). One file is gone for good,
so the worker that draws it sleeps through every retry while the training loop waits for its
batch: no error, no log line, the job just stops moving for seconds (minutes, with real
back-offs), every epoch.
"""

import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

#: the missing file is drawn after the first steps (for the lab's tests)
STEPS_TO_SHOW = 24
RETRIES, BACKOFF = 3, 0.5


class Regressor(nn.Module):
    def __init__(self, features=8, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x)


class ShardFiles(Dataset):
    """One sample per file; file 150 was deleted after the listing was made."""

    def __init__(self, files=256, features=8, seed=0):
        gen = torch.Generator().manual_seed(seed)
        self.store = {i: (torch.randn(features, generator=gen), torch.randn(1, generator=gen)) for i in range(files)}
        self.files = list(self.store)
        del self.store[150]  # gone from the store

    def __len__(self):
        return len(self.files)

    def read(self, name):
        if name not in self.store:
            raise FileNotFoundError(f"sample-{name}.pt")
        return self.store[name]

    def __getitem__(self, index):
        for attempt in range(RETRIES):
            try:
                return self.read(self.files[index])
            except FileNotFoundError:
                time.sleep(BACKOFF * 2**attempt)
        return self.read(self.files[index - 1])


def make():
    torch.manual_seed(0)
    model = Regressor()
    loader = DataLoader(ShardFiles(), batch_size=8, shuffle=True, num_workers=2,
                        generator=torch.Generator().manual_seed(0))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    return {"model": model, "data": loader, "loss_fn": nn.MSELoss(), "optimizer": optimizer}


def train(steps=32):
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
            if step % 8 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
