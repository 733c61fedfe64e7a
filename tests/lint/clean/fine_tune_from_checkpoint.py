"""Resuming training from a checkpoint (not TD340): the loaded model is trained, so train mode is right."""

import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 3))
model.load_state_dict(torch.load("weights.pt", map_location="cpu"))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(10):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(torch.randn(16, 8)), torch.randint(0, 3, (16,)))
    loss.backward()
    optimizer.step()
