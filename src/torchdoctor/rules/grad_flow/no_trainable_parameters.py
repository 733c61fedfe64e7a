"""TD315 no-trainable-parameters."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD315",
    name="no-trainable-parameters",
    category=Category.GRAD_FLOW,
    severity=Severity.ERROR,
    proof="check",
    message="all {count} parameter tensors of the model have requires_grad=False: nothing can train",
    hint="Freeze only what you mean to (freeze the backbone before attaching the new head, or `model.backbone.requires_grad_(False)`), and register layers as submodules.",
    variants={
        "no-parameters": Variant(message="the model has no registered parameters: nothing can train"),
        # the crash "optimizer got an empty parameter list" behind a `requires_grad` filter
        "optimizer-all-frozen": Variant(
            message="all {count} parameter tensors of `{model}` have requires_grad=False, so `{optimizer}` got an empty parameter list from `{source}`",
            hint="Unfreeze what should train before building the optimizer (`{model}.<head>.requires_grad_(True)`, or freeze only the backbone), then pass `{source}`.",
        ),
        # the crash "optimizer got an empty parameter list" from a model without any parameter
        "optimizer-no-parameters": Variant(
            message="`{model}` ({cls}) has no registered parameters, so `{optimizer}` got an empty parameter list from `{source}`",
            hint="Build the layers in `__init__` as attributes of the module (`self.fc = nn.Linear(...)`), or in `nn.ModuleList` / `nn.Sequential`: layers made in `forward()` or kept elsewhere are not the model's parameters.",
        ),
    },
    sees={
        "run": "the crash \"optimizer got an empty parameter list\" when the model's parameters are all frozen and filtered by `requires_grad`, or the model has no registered parameter (at the optimizer's line)",
    },
    doc="""
## What it does
Flags a model with no trainable parameter at all: every parameter has `requires_grad=False`,
or the model has no registered parameters.

`torchdoctor run` also explains the crash "optimizer got an empty parameter list" this way when
the optimizer was given `model.parameters()` filtered by `requires_grad` and every parameter is
frozen, or the model has no registered parameter at all.

## Why is this bad?
`loss.backward()` then fails with "element 0 of tensors does not require grad and does not have
a grad_fn", and the tempting fix, `loss.requires_grad = True`, silences the error and trains
nothing. The usual cause is a freezing loop that runs after the new head was attached, so it
freezes the head too. An optimizer built over frozen parameters raises nothing either.

## Example
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 10))
    model[2] = nn.Linear(16, 3)  # new head
    for parameter in model.parameters():
        parameter.requires_grad = False
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}
```

Use instead:
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 10))
    for parameter in model.parameters():
        parameter.requires_grad = False
    model[2] = nn.Linear(16, 3)  # new head, trainable
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}
```
""",
)
