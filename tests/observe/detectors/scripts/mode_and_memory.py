"""Silent bugs of mode, memory, dtype, clipping, frozen parameters, per-sample loops and a
checkpoint that loads nothing, all in one deterministic run that saves its final state
(argv[1]) for the no-harm comparison."""

import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.2))
        self.frozen_norm = nn.BatchNorm1d(16)
        self.frozen_norm.requires_grad_(False)
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        h = self.frozen_norm(self.body(x))
        h = F.dropout(h, p=0.3)
        return self.head(h)


model = Net()
pretrained = nn.DataParallel(Net()).state_dict()  # keys "module.body.0.weight", ...
model.load_state_dict(pretrained, strict=False)  # matches nothing
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
targets = torch.from_numpy(np.random.default_rng(0).normal(size=(16, 1)))  # float64
total = 0.0
for step in range(24):
    if step == 12:
        model.head.bias.requires_grad_(False)
    optimizer.zero_grad(set_to_none=False)
    x = torch.randn(16, 6)
    loss = F.mse_loss(model(x), targets)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
    loss.backward(retain_graph=True)
    optimizer.step()
    total += loss
    if step % 8 == 7:
        model.eval()
        for _ in range(2):
            model(torch.randn(4, 6)).sum()
        per_sample = torch.cat([model(row.unsqueeze(0)) for row in torch.randn(8, 6)])

torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state(),
            "total": total.detach()}, sys.argv[1])
