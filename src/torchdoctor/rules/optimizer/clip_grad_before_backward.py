"""TD112 clip-grad-before-backward."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD112",
    name="clip-grad-before-backward",
    category=Category.OPTIMIZER,
    severity=Severity.ERROR,
    proof="lint",
    message="gradients are clipped before backward() computes them: the clip acts on stale or empty gradients",
    hint="Call `clip_grad_norm_` after `loss.backward()` and before `optimizer.step()`.",
    variants={
        # a clip after the optimizer step (the rule's own message is for one before backward()); `{step}` names the step
        "after-step": Variant(message="gradients are clipped after {step} has applied them: that step used the unclipped gradients, so the update the clip was meant to limit is not clipped"),
    },
    sees={
        "lint": "clipping before the gradients exist, or after `optimizer.step()` has applied them (once the iteration's every backward() has run; not a norm measured with `inf`, nor another optimizer's parameters)",
        "run": "`clip_grad_norm_` / `clip_grad_value_` before this step's backward() (after the previous step: the message says that step used the unclipped gradients); reported at the clip",
    },
    doc="""
## What it does
Flags `torch.nn.utils.clip_grad_norm_` / `clip_grad_value_` called before `loss.backward()`
in the same training step, or after the step has applied the gradients. The second case is a
clip after `optimizer.step()` (or `scaler.step(optimizer)`) once every backward() of the
loop's iteration has run, and its message says that the step already used the unclipped
gradients. Clipping between backward() and the step is the intended order, and so is
`scaler.unscale_(optimizer)`, clip, `scaler.step(optimizer)`; a clip after one optimizer's
step that another backward() follows (a GAN's second update), a clip of parameters another
optimizer trains, and `clip_grad_norm_(..., float("inf"))` (which only measures the norm)
are left alone.

## Why is this bad?
Clipping changes the `.grad` tensors that exist at that moment: after `zero_grad()` there are
none, otherwise they are last step's. The gradients `backward()` then computes are applied
unclipped, so the clipping you rely on for stability does nothing. After the step it is the
same: `step()` has already applied the unclipped gradients (checked on torch 2.13: SGD's
weights after `backward(); step(); clip_grad_norm_(...)` are bit-identical to those of the
same loop without the clip), and `zero_grad()` then clears what the clip changed.

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
