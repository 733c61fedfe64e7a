"""TD173 trainable-tensor-recreated-in-loop."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD173",
    name="trainable-tensor-recreated-in-loop",
    category=Category.OPTIMIZER,
    severity=Severity.WARNING,
    proof="lint",
    message="`{tensor}` is created again from the same initial value in every iteration, with a new `{optimizer}`: "
            "each `{optimizer}.step()` is thrown away at the next iteration, so `{tensor}` never learns",
    hint="Create `{tensor}` (and `{optimizer}`) once, before the loop, so that the steps add up.",
    sees={
        "lint": "`lam = torch.tensor(init, requires_grad=True)` and `SGD([lam])` built again in every iteration and stepped once: each step is thrown away",
    },
    doc="""
## What it does
Flags a tensor created with `requires_grad=True` (or `.requires_grad_()`) inside a loop from
values the loop does not change (a constant, an attribute), handed to an optimizer that is
also built in that iteration and stepped once in it, when nothing reads the tensor after the
step in that iteration (except to clamp it).

## Why is this bad?
The step updates the tensor, and the next iteration replaces it with a fresh copy of the
initial value and a fresh optimizer (with empty state). The learned value is never used: a
Lagrange multiplier, a temperature or a mask that is meant to be trained along the model
stays at its initial value plus one step, and the loss it enters behaves as if it were a
constant.

## Example
```python
import torch

def fit(model, loader, loss_fn, optimizer, init_lambda):
    for x, y in loader:
        lam = torch.tensor(init_lambda, requires_grad=True)
        lambda_optimizer = torch.optim.SGD([lam], lr=0.01)
        loss = loss_fn(model(x), y) * lam
        optimizer.zero_grad()
        lambda_optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        lambda_optimizer.step()
```

Use instead:
```python
import torch

def fit(model, loader, loss_fn, optimizer, init_lambda):
    lam = torch.tensor(init_lambda, requires_grad=True)
    lambda_optimizer = torch.optim.SGD([lam], lr=0.01)
    for x, y in loader:
        loss = loss_fn(model(x), y) * lam
        optimizer.zero_grad()
        lambda_optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        lambda_optimizer.step()
```
""",
)
