"""TD413 leaf-modified-in-place."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD413",
    name="leaf-modified-in-place",
    category=Category.GRAD_MODE,
    severity=Severity.ERROR,
    proof="run",
    message="a parameter (or another leaf tensor with requires_grad=True) is changed in place while autograd is recording",
    hint="Wrap initialisation and manual weight updates in `with torch.no_grad():` (the `torch.nn.init` functions already do).",
    doc="""
## What it does
Explains the crash "a leaf Variable that requires grad is being used in an in-place
operation" at the line that changes the tensor.

## Why is this bad?
Autograd cannot record an in-place change to a tensor it differentiates with respect to.
Custom weight initialisation (`layer.weight.mul_(0.1)`) and hand-written SGD updates
(`p -= lr * p.grad`) must run with gradient recording switched off.

## Example
```python
from torch import nn

layer = nn.Linear(8, 8)
layer.weight.mul_(0.1)
```

Use instead:
```python
import torch
from torch import nn

layer = nn.Linear(8, 8)
with torch.no_grad():
    layer.weight.mul_(0.1)
```
""",
)
