"""A model trained through torch.compile: its ops run where no line mark sees them."""

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
compiled = torch.compile(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 32), torch.randint(0, 10, (16,))
for step in range(10):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(compiled(x), y)
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}")
