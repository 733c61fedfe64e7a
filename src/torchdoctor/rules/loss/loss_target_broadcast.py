"""TD104 loss-target-broadcast."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD104",
    name="loss-target-broadcast",
    category=Category.LOSS,
    severity=Severity.ERROR,
    proof="check",
    message="{loss} broadcasts input {input_shape} against target {target_shape}: it averages {pairs} pairs instead of {expected}",
    hint="Make the shapes equal before the loss, e.g. `output.squeeze(-1)` or `target.view_as(output)`.",
    variants={
        # the crash of a loss that wants one shape given (N, 1) against (N,) (the binary cross-entropies)
        "cannot-pair-column": Variant(
            message="{loss} needs its input and target in one shape, but gets input {input_shape} and target {target_shape}",
            hint="Drop the size-1 dimension: `{column}.squeeze({axis})` (a model ending in `nn.Linear(..., 1)` gives (N, 1) per batch).",
        ),
        # the crash of input and target holding different numbers of samples
        "cannot-pair-batch": Variant(
            message="{loss} cannot pair input {input_shape} with target {target_shape}: {input_rows} samples against {target_rows}",
            hint="The model's output and the target hold different numbers of samples: check the reshapes in the model (`x.view(-1, n)` can fold values into the batch; `x.flatten(1)` cannot) and that the targets are the batch's own.",
        ),
        # the crash of input and target of the same batch but other sizes
        "cannot-pair": Variant(
            message="{loss} cannot pair input {input_shape} with target {target_shape}",
            hint="Give the target the output's shape: make the model's last layer produce {target_shape} per batch (its `out_features`), or reshape the target to {input_shape} if it holds the same values.",
        ),
    },
    sees={
        "run": "element-wise loss broadcasting `(N, 1)` against `(N,)`: PyTorch's easily missed warning, as an error at your line; and the crash of an element-wise or binary cross-entropy loss whose input and target cannot be paired (\"Target size (torch.Size([64])) must be the same as input size (torch.Size([64, 1]))\", \"The size of tensor a (64) must match the size of tensor b (32)\")",
    },
    doc="""
## What it does
Flags an element-wise loss (`MSELoss`, `L1Loss`, `SmoothL1Loss`, `HuberLoss`, `BCELoss`, ...)
whose input and target have different shapes that broadcast, typically a model output of
shape `(N, 1)` against a target of shape `(N,)`.

`torchdoctor run` also explains the crash of such a loss when the shapes cannot broadcast
("The size of tensor a (5) must match the size of tensor b (4) at non-singleton dimension 0";
BCE's "Target size (torch.Size([64])) must be the same as input size (torch.Size([64, 1]))"),
saying which of the two has the extra dimension or the other number of samples.

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
