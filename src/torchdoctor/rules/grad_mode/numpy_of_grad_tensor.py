"""TD425 numpy-of-grad-tensor."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD425",
    name="numpy-of-grad-tensor",
    category=Category.GRAD_MODE,
    severity=Severity.ERROR,
    proof="run",
    message="`.numpy()` is called on {tensor}, which is part of the autograd graph",
    hint="Use `.detach().cpu().numpy()` (or compute it under `torch.no_grad()`); for a single number, `.item()`.",
    doc="""
## What it does
Explains "Can't call numpy() on Tensor that requires grad" at the line that converts the
tensor, naming it.

## Why is this bad?
NumPy cannot follow autograd, so PyTorch refuses to hand over a tensor that is part of a
graph. Detach it for logging and metrics; inside the model's forward, stay in torch instead
(a NumPy round trip cuts the graph).

## Example
```python
import torch
from torch import nn

model = nn.Linear(8, 1)
prediction = model(torch.randn(4, 8))
values = prediction.numpy()
```

Use instead:
```python
import torch
from torch import nn

model = nn.Linear(8, 1)
prediction = model(torch.randn(4, 8))
values = prediction.detach().numpy()
```
""",
)
