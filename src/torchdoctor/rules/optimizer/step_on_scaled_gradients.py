"""TD155 step-on-scaled-gradients."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD155",
    name="step-on-scaled-gradients",
    category=Category.OPTIMIZER,
    severity=Severity.ERROR,
    proof="lint",
    message="`optimizer.step()` applies gradients that `{scaler}.scale(loss).backward()` multiplied by the loss scale (65536 at first), and skips the scaler's inf/NaN check",
    hint="Step through the scaler: `{scaler}.step(optimizer)` then `{scaler}.update()`.",
    sees={
        "lint": "`optimizer.step()` instead of `scaler.step(optimizer)` after `scaler.scale(loss).backward()`",
    },
    doc="""
## What it does
Flags a direct `optimizer.step()` after `scaler.scale(loss).backward()` when the scaler never
steps (`scaler.step(optimizer)`) or unscales (`scaler.unscale_(optimizer)`) in that step.

## Why is this bad?
`scaler.scale(loss)` multiplies the loss, and so every gradient, by the loss scale (65536 by
default) so that float16 gradients do not underflow. Only `scaler.step` divides it back out,
and skips the step when a gradient overflowed to inf or NaN. Stepping the optimizer directly
applies updates tens of thousands of times too large with SGD, and writes inf/NaN into the
weights at the first overflow with any optimizer.

## Example
```python
import torch

def train(model, loader, loss_fn, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda"):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        optimizer.step()
```

Use instead:
```python
import torch

def train(model, loader, loss_fn, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda"):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
```

## References
- [Automatic mixed precision: typical usage](https://pytorch.org/docs/stable/notes/amp_examples.html#typical-mixed-precision-training)
""",
)
