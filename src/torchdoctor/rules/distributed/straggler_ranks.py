"""TD465 straggler-ranks."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD465",
    name="straggler-ranks",
    category=Category.DISTRIBUTED,
    severity=Severity.WARNING,
    proof="run",
    message="{who} {spend} {ratio:.1f}x as long as the fastest ranks on the work of a step outside backward() and collectives ({slow} vs {fast} per step, optimizer steps {first} to {last}): every other rank waits for {them} at each synchronisation, and steps take {step}",
    hint="Find what {who} {do} alone or more slowly: data loading (too few workers, slow storage on that node), work under `if rank == ...`, a busier or slower machine; balance it, or move it out of the training step.",
    doc="""
## What it does
Compares, rank by rank, the time a training step spends outside `backward()` and outside
collectives (loading data, the forward pass, the optimizer, the script's own work), measured on
every rank from the 4th optimizer step on and compared over at least 16 steps. Ranks whose
median step spends at least 3 times as long as the fastest half of the ranks, by at least a
fifth of a step and 2 ms, are reported, with their hosts in a job on several nodes, when the other ranks wait
for them (their steps take at least half as long). The steps end at the last optimizer step:
what a rank does after training (saving a checkpoint) is not counted, and, the median being the
measure, neither is work one rank does only now and then (rank 0 validating every few epochs).

## Why is this bad?
In data-parallel training every rank waits for the slowest at each gradient all-reduce: one
slow rank, or every rank of one slow node, sets the pace of the whole job, and nothing says so.
The time shows up on the fast ranks, inside their `backward()`, as waiting. The usual causes are
a data loader with too few workers or slow storage on one node, extra work on one rank
at every step (logging, metrics under `if rank == 0:`), or a machine shared with other jobs.

## Example
```python
# torchrun --nproc-per-node 2
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Linear(32, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(40):
    if dist.get_rank() == 1:
        time.sleep(0.03)  # this rank reads its batches from a slow disk
    x, y = torch.randn(64, 32), torch.randint(0, 4, (64,))
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

dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Linear(32, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(40):
    x, y = torch.randn(64, 32), torch.randint(0, 4, (64,))
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
dist.destroy_process_group()
```
""",
)
