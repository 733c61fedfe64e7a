"""TD301 loss-rejects-output."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD301",
    name="loss-rejects-output",
    category=Category.LOSS,
    severity=Severity.ERROR,
    proof="check",
    message="{loss} raises {error} on the model output {output} and the targets {targets}",
    hint="Make the output and targets fit the loss: same shape for element-wise losses (`output.squeeze(-1)`), (N, C) logits with (N,) int64 labels for CrossEntropyLoss.",
    variants={
        # a Hugging Face ModelOutput (or alike) handed to the loss whole
        "model-output": Variant(hint="The model returns a {output_type}, not a tensor: give the loss its logits (`loss_fn(model(x).logits, y)`, {logits}), or pass `labels=` to the model and use its `.loss`."),
    },
    doc="""
## What it does
Calls the loss on the model's output for one batch and reports an exception, with the shapes
and dtypes of what it was given. Class targets out of range or of the wrong dtype have their
own rules (TD105, TD106).

## Why is this bad?
The first training step crashes with a message about tensor sizes that does not say which
of the two sides is wrong, e.g. "Target size (torch.Size([16])) must be the same as input size
(torch.Size([16, 1]))".

## Example
```python
import torch
from torch import nn

def make():
    model = nn.Linear(8, 1)
    x, y = torch.randn(16, 8), (torch.arange(16) % 2).float()
    return {"model": model, "data": (x, y), "loss_fn": nn.BCEWithLogitsLoss()}
```

Use instead:
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Linear(8, 1), nn.Flatten(0))
    x, y = torch.randn(16, 8), (torch.arange(16) % 2).float()
    return {"model": model, "data": (x, y), "loss_fn": nn.BCEWithLogitsLoss()}
```
""",
)
