"""TD111 zero-grad-before-step."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD111",
    name="zero-grad-before-step",
    category=Category.OPTIMIZER,
    severity=Severity.ERROR,
    proof="lint",
    message="zero_grad() runs between backward() and step(): the step sees no gradients and the model never learns",
    hint="Move `optimizer.zero_grad()` before `loss.backward()` (or after `optimizer.step()`).",
    variants={
        # the step itself is out of place: after the reset, before backward() (lint)
        "step-before-backward": Variant(message="{optimizer}.step() runs after zero_grad() (line {reset_line}) and before backward(): every step sees gradients that were just erased, so the model never learns", hint="Call `{optimizer}.step()` after `loss.backward()`."),
        # a reset between backward() and an update by hand (lint)
        "manual-update": Variant(message="this reset erases the gradients backward() computed (line {backward_line}) before the update by hand at line {update_line} reads them: `.grad` is None (or zero) there, so nothing learns", hint="Reset the gradients before the backward() (at the top of the iteration), or after the update."),
    },
    sees={
        "lint": "`zero_grad()` between `backward()` and `step()` (or before a step with no backward in between; also a reset done by a helper function the loop calls, or one between backward() and a hand-written update)",
        "run": "`zero_grad()` between `backward()` and `step()`, at the `zero_grad` line",
    },
    doc="""
## What it does
Flags `zero_grad()` (on the optimizer or the model) called after `loss.backward()` and before
`optimizer.step()` in the same step, also when a helper function the loop calls does the reset;
and a reset between `loss.backward()` and an update written by hand
(`for p in model.parameters(): p.data.add_(-lr * p.grad)`).

## Why is this bad?
The reset erases the gradients that `backward()` just computed, so `step()` has nothing to
apply (with the default `set_to_none=True`, every parameter is skipped). The loss stays flat
and no error is raised.

## Example
```python
def train(model, loader, loss_fn, optimizer):
    for x, y in loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()
```

Use instead:
```python
def train(model, loader, loss_fn, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
```
""",
)
