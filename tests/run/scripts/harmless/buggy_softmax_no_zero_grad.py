"""Deterministic training with bugs the detectors report (softmax before cross_entropy, no
zero_grad, a layer that never gets a gradient): tracing a step must not change the run."""

import sys

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.drop = nn.Dropout(0.2)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.body(x)).detach()
        return self.head(self.drop(h))


torch.manual_seed(0)
torch.set_num_threads(1)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(8):
    x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
    loss = F.cross_entropy(F.softmax(model(x), dim=1), y)
    loss.backward()
    optimizer.step()
torch.save({"model": model.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])
