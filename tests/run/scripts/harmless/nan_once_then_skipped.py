"""A NaN loss at one step (a batch with a zero into log), skipped by the script's own guard:
finding where it came from replays the forward pass (dropout draws random numbers, batch norm
updates statistics), and the rest of the run must be exactly the same."""

import sys

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.BatchNorm1d(6)
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(6, 1)

    def forward(self, x):
        return self.fc(self.drop(self.norm(torch.log(x))))


torch.manual_seed(0)
torch.set_num_threads(1)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(10):
    x = torch.rand(8, 6) + 0.5
    if step == 4:
        x[0, 0] = -1.0
    optimizer.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    if all(torch.isfinite(p.grad).all() for p in model.parameters()):
        optimizer.step()
torch.save({"model": model.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])
