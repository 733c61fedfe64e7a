"""TD112 clip-grad-before-backward."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD112",
    name="clip-grad-before-backward",
    category=Category.OPTIMIZER,
    severity=Severity.ERROR,
    proof="lint",
    message="gradients are clipped before backward() computes them: the clip acts on stale or empty gradients",
    hint="Call `clip_grad_norm_` after `loss.backward()` and before `optimizer.step()`.",
    doc="""
## What it does
Flags `torch.nn.utils.clip_grad_norm_` / `clip_grad_value_` called before `loss.backward()`
in the same training step.

## Why is this bad?
Clipping changes the `.grad` tensors that exist at that moment: after `zero_grad()` there are
none, otherwise they are last step's. The gradients `backward()` then computes are applied
unclipped, so the clipping you rely on for stability does nothing.

## Example
```python
import torch

def train(model, loader, loss_fn, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        loss.backward()
        optimizer.step()
```

Use instead:
```python
import torch

def train(model, loader, loss_fn, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
```
""",
)
