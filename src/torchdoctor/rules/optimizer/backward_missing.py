"""TD170 backward-missing."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD170",
    name="backward-missing",
    category=Category.OPTIMIZER,
    severity=Severity.ERROR,
    proof="lint",
    message="this loop computes `{loss}`, resets the gradients and steps the optimizer, but never calls backward(): every step applies no gradient",
    hint="Call `{loss}.backward()` after computing the loss and before `optimizer.step()`.",
    variants={
        # a reset, then the step, and no backward() of the loss between (lint)
        "reset-then-step": Variant(message="`{optimizer}.step()` runs after its gradients are reset (line {reset_line}) and no backward() of `{loss}` comes between: it applies zero (or no) gradients, and the weights never learn"),
        # the step is in a function the loop calls (lint)
        "in-called-function": Variant(message="the loop that calls `{callee}()` (line {call_line}) computes `{loss}`, resets the gradients and steps the optimizer, but never calls backward(): every step applies no gradient"),
        # one of several terms computed alike is never backpropagated (lint)
        "untrained-term": Variant(message="`{term}` is computed by `{function}` like `{trained}`, which is backpropagated on its own, but no backward() reaches `{term}` or anything made from it: this term trains nothing", hint="Call `{term}.backward()` (or backpropagate the sum of the terms once)."),
    },
    sees={
        "lint": "a loop that computes a loss, resets and steps, and never calls `backward()`; or a function (a per-episode update) that resets, computes a loss and steps with no `backward()` anywhere in it; or, in a loop that backpropagates its losses one by one, a loss of the same loss function that no backward() reaches",
    },
    doc="""
## What it does
Flags a training loop that computes a loss, calls `zero_grad()` and `optimizer.step()`, and
never calls `backward()` (nor `torch.autograd.grad`, nor sets `.grad` by hand), when neither
the loss nor the optimizer is handed to another function that could do it.

The same outside a loop: a function (a reinforcement-learning update run once per episode, say)
that resets the gradients, computes a loss and steps, with no backward() anywhere in it or in
the functions of the file it calls.

And for one loss of several: in a loop that backpropagates its losses one by one
(`errD_real.backward()`, `errD_fake.backward()`), a loss computed by the same loss function that
no backward() reaches, neither itself nor anything made from it (a sum kept only for printing
does not count). Losses computed under `no_grad`, or handed to any call but a plain read, are
left alone.

## Why is this bad?
Without backward() no gradient is computed: after `zero_grad()` every `.grad` is `None` (or
zero), so `step()` leaves the weights as they are (or only applies weight decay). The loop runs,
prints a loss, and the model never learns.

## Example
```python
def train(model, loader, loss_fn, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
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
