"""TD463 ddp-unused-parameters."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD463",
    name="ddp-unused-parameters",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="run",
    message="DistributedDataParallel without `find_unused_parameters=True`: {count} parameter(s) got no gradient in the first training step: {names}; DDP never averages their buckets and fails at the next forward with \"Expected to have finished reduction in the prior iteration\"",
    hint="Remove the parameters the forward does not use, freeze them (`requires_grad_(False)`) before wrapping, or pass `find_unused_parameters=True` to DistributedDataParallel (it costs a graph traversal per step; `static_graph=True` is cheaper when the same parameters are unused every step).",
    doc="""
## What it does
At run time, for a model wrapped in `DistributedDataParallel` without
`find_unused_parameters=True` (and without `static_graph=True`), looks at which trainable
parameters got no gradient from the first synchronised forward and backward, and names them
at the line that builds the DDP wrapper. When the script then crashes with DDP's error, the
crash explanation names them too (DDP's own message gives only their indices).

## Why is this bad?
DDP expects every parameter to get a gradient in every iteration. A head that the forward
skips (an auxiliary classifier, a branch taken on some inputs only) leaves its gradient bucket
incomplete: those gradients are never averaged across ranks, and the next forward raises (seen
on torch 2.13 with gloo, in the second iteration): "Expected to have finished reduction in the
prior iteration before starting a new one. This error indicates that your module has
parameters that were not used in producing loss." followed by "Parameter indices which did not
receive grad for rank 0: 4 5", which does not say which parameters those are.

## Example
```python
# torchrun --nproc-per-node 2
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.head = nn.Linear(8, 4)
        self.aux = nn.Linear(8, 2)  # never used in forward

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(Net())
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
for step in range(3):
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
dist.destroy_process_group()
```

Use instead:
```python
# torchrun --nproc-per-node 2
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.head = nn.Linear(8, 4)
        self.aux = nn.Linear(8, 2)  # never used in forward

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(Net(), find_unused_parameters=True)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
for step in range(3):
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
dist.destroy_process_group()
```
""",
)
