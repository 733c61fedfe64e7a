"""Repeated augmentation as main.py uses it (--repeated-aug): samplers.RASampler over a dataset of 301
random samples for 2 replicas (this process being rank 0), feeding a DataLoader for one epoch of a
linear classifier."""
import torch
import torch.nn as nn
from samplers import RASampler
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
dataset = TensorDataset(torch.randn(301, 10), torch.randint(0, 3, (301,)))
sampler = RASampler(dataset, num_replicas=2, rank=0, shuffle=True)
loader = DataLoader(dataset, sampler=sampler, batch_size=32, drop_last=True)
model = nn.Linear(10, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("epoch", epoch, "loss", loss.item())
