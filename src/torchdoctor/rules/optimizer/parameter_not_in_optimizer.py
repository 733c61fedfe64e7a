"""TD114 parameter-not-in-optimizer."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

_MESSAGE = "{count} trainable parameter(s) are in no optimizer param group and will never be updated: {names}"


def _groups_hint(sibling: bool, placed: bool) -> str:
    """The hint for an optimizer built from several param groups, on purpose: rebuilding it from
    `model.parameters()` would throw the groups' own options away, so name what to add where
    (`sibling`: the missing parameters' modules have other parameters in one group; `placed`:
    the optimizer's line is known)."""
    return ("Add {params} to one of the optimizer's {groups} param groups"
            + (" (param group {index} holds {siblings} of the same module)" if sibling else "")
            + " where it is built" + (" (at {at})" if placed else "")
            + ", or give them their own group (`optimizer.add_param_group({{'params': [...]}})`): "
              "a parameter in no group is never updated.")


RULE = Rule(
    code="TD114",
    name="parameter-not-in-optimizer",
    category=Category.OPTIMIZER,
    severity=Severity.ERROR,
    proof="check",
    message=_MESSAGE,
    hint="Build the optimizer after the model is final (after replacing or adding layers), from `model.parameters()`.",
    variants={
        # check: the cause, from where the module was made and what the optimizer holds
        "created-after": Variant(message=_MESSAGE + " (`{module}` is created at {created}, after the optimizer)"),
        "foreign-tensors": Variant(message=_MESSAGE + " (the optimizer holds {strangers} tensors that are not "
                                   "parameters of this model: was the model or a layer rebuilt after the optimizer?)"),
        # check: an optimizer of several param groups (its hint would undo them)
        "groups": Variant(hint=_groups_hint(sibling=False, placed=True)),
        "groups-sibling": Variant(hint=_groups_hint(sibling=True, placed=True)),
        "groups-unplaced": Variant(hint=_groups_hint(sibling=False, placed=False)),
        "groups-sibling-unplaced": Variant(hint=_groups_hint(sibling=True, placed=False)),
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

