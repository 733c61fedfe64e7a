"""Deterministic training: a CNN, DataLoader workers with random augmentation, SGD with momentum
and weight decay, gradient accumulation over two batches."""

import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self):
        gen = torch.Generator().manual_seed(1)
        self.images = torch.randn(64, 1, 12, 12, generator=gen)
        self.labels = torch.randint(0, 4, (64,), generator=gen)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        image = self.images[i] + 0.1 * torch.randn_like(self.images[i])  # worker RNG
        return image, self.labels[i]


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 5 * 5, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3)
    loader = DataLoader(Noisy(), batch_size=8, shuffle=True, num_workers=2)
    for epoch in range(2):
        for i, (xb, yb) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(xb), yb) / 2
            loss.backward()
            if i % 2 == 1:
                optimizer.step()
                optimizer.zero_grad()
    torch.save({"model": model.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])


if __name__ == "__main__":
    main()
