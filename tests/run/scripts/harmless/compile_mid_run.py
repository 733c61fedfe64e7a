"""torch.compile after observation started: a few eager steps, then the model is compiled and
training goes on; dynamo's counters are printed (they must not change under observation)."""

import sys

import torch
from torch import nn
from torch._dynamo.utils import counters

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
for step in range(10):
    if step == 4:
        model = torch.compile(model, backend="aot_eager")
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
print("frames", dict(counters["frames"]), "stats", dict(counters["stats"]))
print("graph breaks", dict(counters["graph_break"]), "recompiles", dict(counters["recompiles"]))
torch.save({"model": model.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])
