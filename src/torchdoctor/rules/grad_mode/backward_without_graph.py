"""TD416 backward-without-graph."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD416",
    name="backward-without-graph",
    category=Category.GRAD_MODE,
    severity=Severity.ERROR,
    proof="run",
    message="backward() is called on a tensor that has no graph: {why}",
    hint="Compute the loss from the model's output outside `torch.no_grad()`; never set `loss.requires_grad = True`, which silences the error and trains nothing.",
    doc="""
## What it does
Explains the crash "element 0 of tensors does not require grad and does not have a grad_fn"
and says why the loss has no graph: it was computed under `torch.inference_mode()` or
`torch.no_grad()`, every parameter is frozen, or the graph was cut (`.item()`, `.numpy()`,
`.detach()`, `torch.tensor(...)`).

`torchdoctor lint` finds the commonest form before anything runs: in one function, a model's
output made under `torch.no_grad()` / `torch.inference_mode()`, a loss computed from it and
labels (or constants), and `backward()` on that loss. A loss with anything else that can carry a
graph (another model's output, a regulariser added, `requires_grad_()`) is left alone.

## Why is this bad?
Without a graph there is nothing to differentiate. The tempting fix,
`loss.requires_grad = True`, makes the error go away and the model silently stops learning.

## Example
```python
import torch
from torch import nn

model = nn.Linear(8, 1)
x, y = torch.randn(16, 8), torch.randn(16, 1)
with torch.no_grad():
    loss = nn.functional.mse_loss(model(x), y)
loss.backward()
```

Use instead:
```python
import torch
from torch import nn

model = nn.Linear(8, 1)
x, y = torch.randn(16, 8), torch.randn(16, 1)
loss = nn.functional.mse_loss(model(x), y)
loss.backward()
```
""",
)
