"""TD400 step-without-backward."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD400",
    name="step-without-backward",
    category=Category.OPTIMIZER,
    severity=Severity.ERROR,
    proof="run",
    message="optimizer.step() ran {steps} times and no backward() call came before any of them: the step has no gradients to apply",
    hint="Call `loss.backward()` between `optimizer.zero_grad()` and `optimizer.step()` in every training step.",
    sees={
        "run": "`optimizer.step()` without any `backward()`",
    },
    doc="""
## What it does
Under `torchdoctor run`, flags an optimizer that steps repeatedly while no `backward()` call
has happened since its previous step, on every step the run observed closely (the first
steps). Optimizers that compute gradients inside `step(closure)`, like LBFGS, are not flagged.

## Why is this bad?
`optimizer.step()` applies the gradients stored in `.grad`. Without `loss.backward()` there are
none (or only stale ones), so the weights never move: the loss stays where it started and
nothing raises an error.

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
    optimizer.step()
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
