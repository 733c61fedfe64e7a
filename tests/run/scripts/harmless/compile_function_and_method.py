"""A compiled training-step function (`@torch.compile` on forward + loss) around one model, and
`module.compile()` on another; a user-defined module, so dynamo compiles its forward in both."""

import sys

import torch
from torch import nn
from torch._dynamo.utils import counters


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 16), nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


torch.manual_seed(0)
torch.set_num_threads(1)
first, second = Net(), Net()
second.compile(backend="aot_eager")
optimizer = torch.optim.Adam([*first.parameters(), *second.parameters()], lr=1e-2)


@torch.compile(backend="aot_eager")
def loss_of(x, y):
    return nn.functional.cross_entropy(first(x), y)


x, y = torch.randn(32, 6), torch.randint(0, 3, (32,))
for step in range(8):
    optimizer.zero_grad()
    (loss_of(x, y) + nn.functional.cross_entropy(second(x), y)).backward()
    optimizer.step()
print("frames", dict(counters["frames"]), "stats", dict(counters["stats"]))
print("graph breaks", dict(counters["graph_break"]), "recompiles", dict(counters["recompiles"]))
torch.save({"first": first.state_dict(), "second": second.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])
