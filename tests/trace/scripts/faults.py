"""A small CNN that writes, for each step, the page faults its thread took (argv: output, steps)."""

import json
import resource
import sys

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
out, steps = sys.argv[1], int(sys.argv[2])
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,))
faults = []
for step in range(steps):
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
    faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before)
with open(out, "w") as file:
    json.dump(faults, file)
