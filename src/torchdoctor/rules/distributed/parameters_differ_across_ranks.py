"""TD460 parameters-differ-across-ranks."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD460",
    name="parameters-differ-across-ranks",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="run",
    message="parameter `{param}` differs across ranks {when}: {cause}",
    hint="Every rank must apply the same update to the same weights: call the DistributedDataParallel wrapper itself (`model(x)`, not `model.module(x)`), seed the model identically on every rank, and change parameters only on all ranks at once.",
    doc="""
## What it does
At run time (`torchdoctor run`, several ranks), compares the parameters of a data-parallel model
across ranks: a model wrapped in `DistributedDataParallel`, or one whose gradients the script
all-reduces itself. Each rank writes a checksum of every parameter's bits, and of its gradient,
before and after the first optimizer steps and then at sparse steps (2, 4, 8, ..., then every
1024th) to its own record file; the runner compares them when the job ends. Nothing is sent
between the ranks. It names the first parameter and step where the ranks differ, and why: the
ranks started from different weights, their gradients were not averaged (DDP bypassed by
calling `model.module(x)`, noting which line did it), or the same gradients gave different
updates (a learning rate that depends on the rank, an update made on some ranks only).

## Why is this bad?
Data parallelism trains one model on several ranks: it works only while every replica holds
the same weights. Once they differ, each rank trains its own model on its own shard, the
checkpoint saved by rank 0 is not the model that was evaluated elsewhere, and nothing fails:
DDP checks shapes, not values. `model.module(x)` in a training step is enough: the forward
bypasses DDP, so backward() never all-reduces the gradients (seen on torch 2.13 with gloo: the
ranks' weights differ after the first step, silently).

## Example
```python
# torchrun --nproc-per-node 2
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 16) + dist.get_rank(), torch.randint(0, 4, (32,))
for step in range(5):
    optimizer.zero_grad()
    F.cross_entropy(model.module(x), y).backward()
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

dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 16) + dist.get_rank(), torch.randint(0, 4, (32,))
for step in range(5):
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
dist.destroy_process_group()
```

## References
- [DistributedDataParallel](https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html): gradients are averaged by hooks that the wrapper's own `forward` prepares.
""",
)
