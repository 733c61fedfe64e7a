"""TD307 parameter-not-updated-by-step."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD307",
    name="parameter-not-updated-by-step",
    category=Category.OPTIMIZER,
    severity=Severity.WARNING,
    proof="check",
    message="{number} trainable parameter(s) have a non-zero gradient but one optimizer.step() leaves them unchanged: {names}",
    variants={
        # the weights are in a 16-bit float type
        "low-precision": Variant(message="{number} trainable parameter(s) have a non-zero gradient but one optimizer.step() leaves them unchanged: {names} ({dtypes} weights: the update is below their precision)"),
    },
    hint="Keep float32 master weights (train in float32 with autocast to bfloat16/float16 instead of converting the model), or raise the learning rate of these groups.",
    doc="""
## What it does
Takes one optimizer step on a copy, after a forward and backward pass, and flags trainable
parameters that had a non-zero gradient, belong to a param group with a learning rate above
zero, and still did not change by a single bit. (A group with `lr=0` is a deliberate freeze
and is not reported.)

## Why is this bad?
The optimizer computed an update, and the weights did not take it. With bfloat16 or float16
weights, an update smaller than half the spacing between representable numbers rounds away:
a weight of 0.1 in bfloat16 cannot move by less than about 0.0002, so small learning rates do
nothing at all and the loss stays flat.

## Example
```python
import torch
from torch import nn

def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(torch.bfloat16)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    x, y = torch.randn(16, 16, dtype=torch.bfloat16), torch.arange(16) % 4
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}
```

Use instead:
```python
import torch
from torch import nn

def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    x, y = torch.randn(16, 16), torch.arange(16) % 4
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}
```
""",
)
