"""torch.jit.trace and torch.jit.script of a model trained under observation, then saved with
torch.jit.save: the traced and scripted graphs must be the same as without torchdoctor."""

import sys

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Dropout(0.1))
        self.head = nn.Linear(12, 2)

    def forward(self, x):
        return self.head(self.body(x))


torch.manual_seed(0)
torch.set_num_threads(1)
model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x, y = torch.randn(32, 6), torch.randn(32, 2)
for _ in range(12):
    optimizer.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
model.eval()
traced = torch.jit.trace(model, x)
scripted = torch.jit.script(model)
print(traced.graph)
print(scripted.code)
torch.jit.save(scripted, sys.argv[1] + ".jit")
torch.save({"model": model.state_dict(), "traced": traced(x), "scripted": scripted(x), "rng": torch.get_rng_state()}, sys.argv[1])
