"""TD157 optimizer-created-in-loop."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD157",
    name="optimizer-created-in-loop",
    category=Category.OPTIMIZER,
    severity=Severity.WARNING,
    proof="lint",
    message="`{optimizer}` is created anew in every iteration of the loop that steps it: its state (momentum, Adam's moment estimates, step count) starts from zero each time",
    hint="Create the optimizer once, before the training loop.",
    sees={
        "lint": "a fresh optimizer (and lost momentum) every iteration",
    },
    doc="""
## What it does
Flags an optimizer constructed inside a loop and stepped in the same loop, so that every
iteration gets a fresh optimizer.

## Why is this bad?
Momentum, Adam's running averages and its bias-correction step count live in the optimizer.
Re-creating it every step throws them away: Adam degenerates into sign-SGD with a warm-up
correction on every step, momentum never builds up, and a learning-rate scheduler attached
to the old optimizer no longer affects training. Nothing fails; the model just trains worse.

## Example
```python
import torch

def train(model, loader, loss_fn):
    for x, y in loader:
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
```

Use instead:
```python
import torch

def train(model, loader, loss_fn):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
```
""",
)
