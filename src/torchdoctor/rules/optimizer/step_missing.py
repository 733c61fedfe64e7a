"""TD172 step-missing."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD172",
    name="step-missing",
    category=Category.OPTIMIZER,
    severity=Severity.ERROR,
    proof="lint",
    message="this loop resets `{optimizer}`'s gradients and calls backward(), but never steps an optimizer: the weights never change",
    hint="Call `{optimizer}.step()` after `loss.backward()` (and before the next `zero_grad()`).",
    variants={
        # an optimizer no code of the file steps (lint)
        "never-stepped": Variant(message="`{optimizer}` is never stepped, though the gradients of {model} it was built over are reset and computed here: they are thrown away, and its weights never change"),
    },
    sees={
        "lint": "a loop that resets and backpropagates, and never steps; or one optimizer of several that nothing in the file steps while its gradients are reset and computed (a GAN's discriminator)",
    },
    doc="""
## What it does
Flags a loop that calls `optimizer.zero_grad()` and `backward()` but never `step()` (on any
optimizer or scaler, in the loop or in the functions of the file it calls), when the optimizer
is not handed to another function that could step it.

Also flags, one optimizer at a time, an optimizer bound to a name that nothing in the file ever
steps while its gradients (or its model's) are reset and a `backward()` runs: a GAN whose
discriminator's step went missing while the generator's optimizer still steps in the same loop,
or a per-episode update function; an optimizer a class with no base keeps on `self` is judged the
same way (a trainer whose `self.optimizer.step()` went missing). It points at the last `backward()` after the reset, where the
step belongs. An optimizer handed to any call but a learning-rate scheduler, returned, or
stored elsewhere may be stepped there, and is left alone.

## Why is this bad?
The gradients are computed and then thrown away by the next `zero_grad()`: the weights never
move, the loss only changes with the data, and nothing raises.

## Example
```python
def train(model, loader, loss_fn, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
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
