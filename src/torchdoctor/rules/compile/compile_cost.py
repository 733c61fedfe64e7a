"""TD483 compile-cost."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD483",
    name="compile-cost",
    category=Category.COMPILE,
    severity=Severity.INFO,
    proof="run",
    message="torch.compile took {seconds:.1f} s for {regions} region(s){speed}",
    hint="Compilation is paid once per process: for short runs, tests and debugging, run eagerly (or `torch.compile(..., mode=\"reduce-overhead\")` only on the hot part); keep compile for long training runs.",
    sees={
        "run": "compile time per region and the measured forward speed-up, with the number of passes it takes to pay for itself (info)",
    },
    doc="""
## What it does
Reports how long `torch.compile` spent compiling (dynamo, AOT autograd and the backend, per
compiled region, read from dynamo's own metrics), and, for a compiled model, its measured
forward speed-up against its eager forward on the same input (one private eager replay) and
how many steps it takes to pay the compilation back at that speed-up. Measured times vary
with the machine's load; the finding is there whenever something was compiled.

## Why is this bad?
It is not a bug: it says whether compiling pays off for this run. A short fine-tuning run or
a unit test can spend more time compiling than training.

## Example
```python
import torch
from torch import nn

model = torch.compile(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    optimizer.zero_grad()
    model(torch.randn(16, 8)).pow(2).mean().backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    optimizer.zero_grad()
    model(torch.randn(16, 8)).pow(2).mean().backward()
    optimizer.step()
```
""",
)
