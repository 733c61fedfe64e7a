"""Attaches ignite's HSIC metric to an evaluator (as its docstring shows) and runs it over a few
batches of features and targets; in one batch the target is constant (a batch of a single class)."""
import math

import torch
from ignite.engine import Engine
from ignite.metrics import HSIC

torch.manual_seed(0)
evaluator = Engine(lambda engine, batch: batch)
HSIC().attach(evaluator, "hsic")
batches = []
for i in range(3):
    x = torch.randn(16, 5)
    y = torch.ones(16, 3) if i == 1 else torch.sin(x[:, :3])
    batches.append([x, y])
state = evaluator.run(batches)
print("hsic", state.metrics["hsic"])
assert math.isfinite(state.metrics["hsic"]), "HSIC is not finite"
