"""LBFGS with a closure: the optimizer calls the closure (forward, loss, backward) several
times inside each step()."""

import sys

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(5, 10), nn.Tanh(), nn.Linear(10, 1))
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4, history_size=5)
x, y = torch.randn(48, 5), torch.randn(48, 1)
for step in range(6):
    def closure():
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    loss = optimizer.step(closure)
    print(f"step {step}: {loss.item():.6f}")
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])
