"""Crashes in its 7th step, inside the traced steps (--skip 3 --steps 5): a layer gets 30
features instead of 32."""

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 32), torch.randint(0, 10, (16,))
for step in range(20):
    optimizer.zero_grad()
    out = model(x if step < 6 else x[:, :30])
    loss = nn.functional.cross_entropy(out, y)
    loss.backward()
    optimizer.step()
