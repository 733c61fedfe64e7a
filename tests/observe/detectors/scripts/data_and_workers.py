"""Silent data bugs with real DataLoader workers (a generator copied into every worker, raw
pixels, label-sorted data without shuffling, a DistributedSampler without set_epoch), in one
deterministic run that saves its final state (argv[1]) for the no-harm comparison."""

import sys

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Pixels(Dataset):
    def __init__(self):
        generator = torch.Generator().manual_seed(0)
        self.images = torch.randint(0, 256, (64, 1, 8, 8), generator=generator).float()
        self.labels = torch.arange(64) // 16  # sorted by class
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        noise = torch.rand(1).item() + self.rng.normal()  # both the reseeded and the copied generator
        return (self.images[index] + round(noise)).clamp(0, 255), self.labels[index]


if __name__ == "__main__":
    torch.manual_seed(0)
    data = Pixels()
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
    sorted_loader = DataLoader(data, batch_size=8, num_workers=2)
    sampler = DistributedSampler(data, num_replicas=1, rank=0)
    sampled_loader = DataLoader(data, batch_size=8, sampler=sampler)
    for epoch in range(2):
        for loader in (sorted_loader, sampled_loader):
            for x, y in loader:
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])
