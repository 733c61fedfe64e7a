"""TD113 clip-grad-on-scaled-gradients."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD113",
    name="clip-grad-on-scaled-gradients",
    category=Category.OPTIMIZER,
    severity=Severity.ERROR,
    proof="lint",
    message="gradients are clipped while still multiplied by the GradScaler's scale (65536 by default): the clip shrinks every update",
    hint="Call `scaler.unscale_(optimizer)` before clipping, then `scaler.step(optimizer)`.",
    sees={
        "lint": "clipping AMP gradients without `scaler.unscale_()`",
        "run": "clipping gradients of a `GradScaler`-scaled loss before `scaler.unscale_(optimizer)`; reported at the clip",
    },
    doc="""
## What it does
Flags gradient clipping between `scaler.scale(loss).backward()` and `scaler.step(optimizer)`
when `scaler.unscale_(optimizer)` is not called first.

## Why is this bad?
With automatic mixed precision the gradients are multiplied by the loss scale (65536 at
first). A gradient whose true norm is 4.5 has a norm of about 293,000 before `unscale_`, so
`clip_grad_norm_(..., 1.0)` divides the update by a huge factor: training with AMP
mysteriously stops making progress.

## Example
```python
import torch

def train(model, loader, loss_fn, optimizer, scaler):
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda"):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
```

Use instead:
```python
import torch

def train(model, loader, loss_fn, optimizer, scaler):
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda"):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
```

## References
- [AMP examples: gradient clipping](https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping)
""",
)
