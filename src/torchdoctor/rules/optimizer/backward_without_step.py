"""TD401 backward-without-step."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD401",
    name="backward-without-step",
    category=Category.OPTIMIZER,
    severity=Severity.ERROR,
    proof="run",
    message="backward() ran {count} times but no optimizer ever stepped: the gradients are computed and the weights never change",
    hint="Call `optimizer.step()` after `loss.backward()` in every training step (then `optimizer.zero_grad()` before the next backward).",
    sees={
        "run": "`backward()` without any `step()`",
    },
    doc="""
## What it does
Under `torchdoctor run`, flags a script that creates an optimizer and calls `backward()`
repeatedly but never calls `optimizer.step()` (neither directly nor through
`GradScaler.step`), when the script runs to its end. Scripts that update the weights by hand
and create no optimizer are not flagged.

## Why is this bad?
`backward()` only computes gradients; the optimizer's `step()` is what changes the weights.
Without it the model trains for hours and ends exactly as it started.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8), torch.randn(32, 1)
for step in range(5):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8), torch.randn(32, 1)
for step in range(5):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
```
""",
)
