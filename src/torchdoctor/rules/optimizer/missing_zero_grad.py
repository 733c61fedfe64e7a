"""TD110 missing-zero-grad."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD110",
    name="missing-zero-grad",
    category=Category.OPTIMIZER,
    severity=Severity.ERROR,
    proof="lint",
    message="gradients are never reset in this training loop: each optimizer.step() uses the sum of all earlier gradients",
    hint="Call `optimizer.zero_grad()` once per step (before `loss.backward()`), or `model.zero_grad()`.",
    variants={
        # no reset in the closure given to optimizer.step() (run)
        "closure": Variant(message="gradients are never reset in the closure given to optimizer.step(): every evaluation of the closure adds its gradients to all earlier ones", hint="Call `optimizer.zero_grad()` at the start of the closure, before `loss.backward()`."),
        # only other optimizers' gradients are reset in the loop (lint)
        "others-reset": Variant(message="`{optimizer}` is stepped in this loop but its gradients are never reset (only {others} is): each `{optimizer}.step()` uses the sum of all earlier gradients", hint="Call `{optimizer}.zero_grad()` before the backward() whose gradients it applies."),
        # the step is in a function the loop calls (lint)
        "in-called-function": Variant(message="gradients are never reset in the loop that calls `{callee}()` (line {call_line}): each optimizer.step() uses the sum of all earlier gradients"),
        # parameters updated by hand from their `.grad` (lint)
        "manual-update": Variant(message="the parameters are updated by hand from their `.grad` (line {update_line}) but their gradients are never reset in this loop: each backward() adds to the last, so each update applies the sum of all earlier gradients", hint="Reset the gradients before backward(): `model.zero_grad()`, or `p.grad = None` / `p.grad.zero_()` after the update."),
        # the same, reset only in the branch where the update by hand does not run
        "manual-update-reset-elsewhere": Variant(message="the parameters are updated by hand from their `.grad` (line {update_line}) but their gradients are reset only when the update by hand does not run (the reset at line {reset_line} is in the other branch): each backward() adds to the last, so each update applies the sum of all earlier gradients", hint="Reset the gradients before backward(): `model.zero_grad()`, or `p.grad = None` / `p.grad.zero_()` after the update."),
    },
    sees={
        "lint": "a loop with `backward()` and `step()` and no gradient reset (also when the step is in a function the loop calls, or when only another optimizer, or the model another optimizer is built over, is reset, or when the optimizer is rebuilt every iteration over the model's parameters, or when the parameters are updated by hand from `.grad`; accumulation with a periodic reset is fine)",
        "run": "gradients never reset between steps (seen as gradients arrive: last step's gradient still in `.grad`, no reset since)",
    },
    doc="""
## What it does
Flags a training loop that calls `backward()` and `optimizer.step()` on every iteration but
never resets the gradients (`optimizer.zero_grad()`, `model.zero_grad()` or setting
`p.grad = None`), neither in the loop nor in a function it calls each iteration.
The backward and the step may sit in a function the loop calls (`for batch in loader:
train_step(batch)`). With several optimizers built in the file, one that is stepped while only
*another* one, over other parameters, or only the model another optimizer trains, is reset (a
GAN loop that resets only the generator) is flagged too. So is a hand-written update
(`p.data.add_(-lr * p.grad)`, `w -= lr * w.grad`) in a loop that runs backward() and resets no
gradient at all. Gradient accumulation, where the reset runs every K iterations, is
not flagged. An optimizer built again in every iteration changes nothing: a new
`SGD(model.parameters())` does not reset the parameters' `.grad` (checked on torch 2.13), so
that loop is flagged too; one built over a tensor made in the same iteration (a latent
optimised afresh at each step) starts from no gradient and is not.

## Why is this bad?
`backward()` adds into `.grad` by design. Without a reset, step N updates the weights with
the sum of the gradients of steps 1..N: the effective learning rate grows every step and the
loss diverges or oscillates, with no error.

## Example
```python
def train(model, loader, loss_fn, optimizer):
    for x, y in loader:
        loss = loss_fn(model(x), y)
        loss.backward()
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

## References
- [Zeroing out gradients in PyTorch](https://pytorch.org/tutorials/recipes/recipes/zeroing_out_gradients.html)
""",
)
