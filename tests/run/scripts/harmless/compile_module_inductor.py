"""torch.compile(model, mode="reduce-overhead") with inductor from the first step (torchdoctor's
warm-up, when its module hooks are on; on a CPU the mode compiles as the default one), dropout
drawing random numbers inside the compiled graph; dynamo's counters are printed: the same
graphs, no recompilation, no warning."""

import sys

import torch
from torch import nn
from torch._dynamo.utils import counters

torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.compile(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 4)), mode="reduce-overhead")
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(64, 8), torch.randint(0, 4, (64,))
for step in range(8):
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
print("frames", dict(counters["frames"]), "stats", dict(counters["stats"]))
print("graph breaks", dict(counters["graph_break"]), "recompiles", dict(counters["recompiles"]))
torch.save({"model": model.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])
