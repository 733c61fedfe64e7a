"""TD147 loss-accumulated-with-history."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD147",
    name="loss-accumulated-with-history",
    category=Category.MEMORY,
    severity=Severity.WARNING,
    unsafe_fix=True,
    proof="lint",
    message="`{target} += {value}` keeps the autograd history of every step alive: memory grows with each iteration",
    hint="Accumulate a number instead: `{target} += {value}.item()` (or `.detach()`).",
    variants={  # by how the loop accumulates (run's detectors/memory.py reads the statement)
        "append": Variant(
            message="`{statement}` keeps every step's `{value}` with its autograd history: each step's graph stays alive "
            "and memory grows with each iteration",
            hint="Append a number or a detached tensor instead: `{target}.append({term}.item())` (or `.detach()`).",
        ),
        "sum": Variant(
            message="`{statement}` keeps the autograd history of every step alive: memory grows with each iteration",
            hint="Accumulate a number instead: add `{term}.item()` (or `.detach()`) to `{target}`.",
        ),
        "expression": Variant(hint="Accumulate a number instead: add `{term}.item()` (or `.detach()`) to `{target}`."),
    },
    sees={
        "lint": "`total += loss` in a training loop where `loss` is backpropagated on its own (a total the loop resets after each step is fine)",
        "run": "a running total (`total += loss`, `total = total + loss`) or a list (`losses.append(loss)`) still holds the previous step's autograd history; reported at the accumulating line",
    },
    doc="""
## What it does
Flags a running total built from loss tensors (`total += loss`, `total = total + loss`) in a
training or evaluation loop, outside `torch.no_grad()`, when the tensor still carries its
autograd history. Lint leaves alone a total that the same loop sets back to a fresh value
(`running_loss = 0` after each optimizer step): it holds a few iterations' graphs at most.

## Why is this bad?
The sum is itself part of the autograd graph: it holds a reference to every step's loss node,
so memory grows with every iteration until the epoch ends, or until an out-of-memory error
hours in. The value you wanted is just a number.

## Example
```python
def train_epoch(model, loader, loss_fn, optimizer):
    total = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss
    return total / len(loader)
```

Use instead:
```python
def train_epoch(model, loader, loss_fn, optimizer):
    total = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(loader)
```

## Fix safety
The fix appends `.item()`. It changes the total from a tensor into a Python float, which
is what a metric needs, but code that later calls tensor methods on it would need adapting.
""",
)
