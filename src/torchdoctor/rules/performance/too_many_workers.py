"""TD312 too-many-workers."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD312",
    name="too-many-workers",
    category=Category.PERFORMANCE,
    severity=Severity.WARNING,
    proof="check",
    message="the DataLoader starts {workers} worker processes on a machine with {cpus} CPUs available to this process",
    hint="Use at most the number of available CPUs (`len(os.sched_getaffinity(0))` on Linux), minus those the training process needs; measure, more is not faster.",
    doc="""
## What it does
Flags a DataLoader with more worker processes than the CPUs this process may use (the CPU
affinity mask, which containers and schedulers set, not the machine's total).

## Why is this bad?
Each worker is a process with its own copy of the dataset, plus its share of the prefetched
batches in shared memory. More workers than CPUs do not load faster: they compete with each
other and with the training process (which needs CPUs to launch GPU kernels), and they use
memory that may run out ("DataLoader worker ... is killed by signal: Killed").
(The check's documentation examples run on a simulated machine with 4 CPUs.)

## Example
```python
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

def make():
    data = TensorDataset(torch.randn(64, 8), torch.arange(64) % 3)
    loader = DataLoader(data, batch_size=16, shuffle=True, num_workers=16)
    return {"model": nn.Linear(8, 3), "data": loader, "loss_fn": nn.CrossEntropyLoss()}
```

Use instead:
```python
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

def make():
    data = TensorDataset(torch.randn(64, 8), torch.arange(64) % 3)
    loader = DataLoader(data, batch_size=16, shuffle=True, num_workers=2)
    return {"model": nn.Linear(8, 3), "data": loader, "loss_fn": nn.CrossEntropyLoss()}
```
""",
)
