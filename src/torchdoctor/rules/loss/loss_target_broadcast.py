"""TD104 loss-target-broadcast."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD104",
    name="loss-target-broadcast",
    category=Category.LOSS,
    severity=Severity.ERROR,
    proof="check",
    message="{loss} broadcasts input {input_shape} against target {target_shape}: it averages {pairs} pairs instead of {expected}",
    hint="Make the shapes equal before the loss, e.g. `output.squeeze(-1)` or `target.view_as(output)`.",
    sees={
        "run": "element-wise loss broadcasting `(N, 1)` against `(N,)`: PyTorch's easily missed warning, as an error at your line",
    },
    doc="""
## What it does
Flags an element-wise loss (`MSELoss`, `L1Loss`, `SmoothL1Loss`, `HuberLoss`, `BCELoss`, ...)
whose input and target have different shapes that broadcast, typically a model output of
shape `(N, 1)` against a target of shape `(N,)`.

## Why is this bad?
Broadcasting `(N, 1)` against `(N,)` gives an `(N, N)` matrix: the loss compares every
prediction with every target and averages that. Training runs and converges to predicting the
mean. PyTorch only emits a `UserWarning` ("Using a target size ... that is different to the
input size ...") that scrolls past in the log.

## Example
```python
import torch
from torch import nn

def make():
    model = nn.Linear(4, 1)
    x, y = torch.randn(16, 4), torch.randn(16)
    return {"model": model, "data": (x, y), "loss_fn": nn.MSELoss()}
```

Use instead:
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Linear(4, 1), nn.Flatten(0))
    x, y = torch.randn(16, 4), torch.randn(16)
    return {"model": model, "data": (x, y), "loss_fn": nn.MSELoss()}
```
""",
)
