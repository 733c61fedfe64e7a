"""TD151 backward-under-no-grad."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD151",
    name="backward-under-no-grad",
    category=Category.GRAD_MODE,
    severity=Severity.ERROR,
    proof="lint",
    message="`{loss}` is computed and backpropagated with gradients disabled (torch.no_grad / inference_mode): it has no graph",
    hint="Compute the loss and call backward() outside `torch.no_grad()` (keep no_grad for evaluation only).",
    variants={
        # a decorator turns gradients off in the whole function
        "decorator": Variant(message="`@{decorator}` turns gradients off in all of `{function}()`, which computes `{loss}` and calls backward() on it (line {backward_line}): it has no graph", hint="Remove the decorator from `{function}()` (keep no_grad for evaluation only)."),
    },
    sees={
        "lint": "a loss computed and backpropagated under `no_grad` / `inference_mode`",
    },
    doc="""
## What it does
Flags `loss.backward()` inside a `torch.no_grad()` / `torch.inference_mode()` block (or a
function decorated with one) when the loss itself was computed inside that block.

## Why is this bad?
Under `no_grad` no autograd graph is recorded, so the loss has no `grad_fn` and backward()
raises "element 0 of tensors does not require grad and does not have a grad_fn". The usual
"fix", `loss.requires_grad = True`, silences the error and trains nothing. (A loss computed
*outside* the block can be backpropagated inside it; that is not flagged.)

## Example
```python
import torch

def train_step(model, x, y, loss_fn, optimizer):
    with torch.no_grad():
        loss = loss_fn(model(x), y)
        loss.backward()
    optimizer.step()
```

Use instead:
```python
import torch

def train_step(model, x, y, loss_fn, optimizer):
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        print(loss_fn(model(x), y).item())
```
""",
)
