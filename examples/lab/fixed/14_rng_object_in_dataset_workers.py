"""Pitfall: a NumPy Generator created in Dataset.__init__, with DataLoader workers.

Every worker gets a copy of the dataset, generator state included. PyTorch reseeds the global
random, torch and np.random states per worker, but not a generator object: all workers draw the
same "random" augmentation, and the same again every epoch.
"""

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, get_worker_info

NUM_CLASSES = 4


class JitteredDataset(Dataset):
    def __init__(self, x, y, noise=0.1):
        self.x, self.y, self.noise = x, y, noise
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, index):
        jitter = self.rng.normal(0.0, self.noise, size=self.x.shape[1]).astype(np.float32)
        return self.x[index] + torch.from_numpy(jitter), self.y[index]


def seed_worker(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)


class Classifier(nn.Module):
    def __init__(self, features=20, hidden=64, classes=NUM_CLASSES):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


def make_data(n=256, features=20, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x @ torch.randn(features, NUM_CLASSES, generator=gen)).argmax(dim=1)
    return x, y


def make():
    torch.manual_seed(0)
    model = Classifier()
    dataset = JitteredDataset(*make_data())
    loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=2, worker_init_fn=seed_worker)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
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
            if step % 10 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
