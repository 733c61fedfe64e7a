"""TD306 parameter-in-several-groups."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD306",
    name="parameter-in-several-groups",
    category=Category.OPTIMIZER,
    severity=Severity.ERROR,
    proof="check",
    message="{number} parameter(s) appear in more than one optimizer param group and are updated several times per step: {names}",
    hint="Put every parameter in exactly one group: build the groups from disjoint lists (e.g. split by name), and do not append to `optimizer.param_groups[i][\"params\"]` by hand.",
    doc="""
## What it does
Flags parameters listed in more than one param group of the optimizer.

## Why is this bad?
`torch.optim` refuses duplicates when the optimizer is built ("some parameters appear in more
than one parameter group"), but groups edited afterwards are not checked again. Each step then
updates those parameters once per group, with each group's learning rate and weight decay:
they move two or more times as fast as the rest.

## Example
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.SGD([{"params": model[0].parameters()}, {"params": model[2].parameters(), "lr": 0.01}], lr=0.1)
    optimizer.param_groups[0]["params"].extend(model[2].parameters())  # "also train the head"
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}
```

Use instead:
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.SGD([{"params": model[0].parameters()}, {"params": model[2].parameters(), "lr": 0.01}], lr=0.1)
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}
```
""",
)
