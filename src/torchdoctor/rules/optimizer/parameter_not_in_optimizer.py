"""TD114 parameter-not-in-optimizer."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD114",
    name="parameter-not-in-optimizer",
    category=Category.OPTIMIZER,
    severity=Severity.ERROR,
    proof="check",
    message="{count} trainable parameter(s) are in no optimizer param group and will never be updated: {names}",
    hint="Build the optimizer after the model is final (after replacing or adding layers), from `model.parameters()`.",
    variants={
        # the model is built again after its optimizer (lint)
        "model-re-created": Variant(message="`{target}` is re-created after the optimizer was built from `{built_from}.parameters()` (line {built_line}): its parameters are in no param group and will never be updated"),
        # a layer of the model is replaced after its optimizer (lint)
        "layer-replaced": Variant(message="`{target}` is assigned a new layer after the optimizer was built from `{built_from}.parameters()` (line {built_line}): its parameters are in no param group and will never be updated"),
    },
    sees={
        "lint": "a layer replaced or added (or the model re-created) after the optimizer was built from `model.parameters()`",
        "run": "parameters that get gradients but are in no optimizer (a head replaced after the optimizer), at the optimizer's line",
    },
    doc="""
## What it does
Flags trainable parameters (`requires_grad=True`) of the model that belong to no param group
of the optimizer, typically because a layer was replaced or added after the optimizer was
built, or because the optimizer was given only part of the model.

## Why is this bad?
The optimizer keeps references to the tensors it was given. A layer created afterwards gets
gradients but is never updated: it stays at its random initialisation while the rest trains,
and nothing reports it.

## Example
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model[2] = nn.Linear(16, 3)  # new head, after the optimizer
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}
```

Use instead:
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    model[2] = nn.Linear(16, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}
```
""",
)

#: the hint for an optimizer built from several param groups, on purpose: rebuilding it from
#: `model.parameters()` would throw the groups' own options away, so name what to add where
GROUPS_HINT = (
    "Add {names} to one of the optimizer's {groups} param groups{suggestion} where it is built{at}, "
    "or give them their own group (`optimizer.add_param_group({{'params': [...]}})`): "
    "a parameter in no group is never updated."
)
#: `suggestion` when the missing parameters' modules have other parameters in one group
SIBLING_GROUP = " (param group {index} holds {siblings} of the same module)"
