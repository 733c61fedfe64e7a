"""A small training loop that prints one line per step (to see where the script goes on)."""

import sys

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 12
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 32), torch.randint(0, 10, (64,))
for step in range(steps):
    optimizer.zero_grad()
    h = x.t().contiguous().t()
    out = model(h)
    loss = nn.functional.cross_entropy(out, y)
    loss.backward()
    optimizer.step()
    print(f"step {step}", flush=True)
