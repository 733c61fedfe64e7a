"""Deterministic training: a GRU with its hidden state carried (detached) across steps, AdamW,
a functional MSE loss, and an evaluation pass under no_grad between steps."""

import sys

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
gru = nn.GRU(4, 8, batch_first=True)
head = nn.Linear(8, 1)
params = list(gru.parameters()) + list(head.parameters())
optimizer = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1)
hidden = torch.zeros(1, 4, 8)
for step in range(12):
    x = torch.randn(4, 5, 4)
    target = x.sum(dim=(1, 2)).unsqueeze(1)
    out, hidden = gru(x, hidden.detach())
    loss = nn.functional.mse_loss(head(out[:, -1]), target)
    optimizer.zero_grad(set_to_none=False)
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        check = head(gru(torch.randn(2, 3, 4))[0][:, -1])
torch.save({"gru": gru.state_dict(), "head": head.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])
