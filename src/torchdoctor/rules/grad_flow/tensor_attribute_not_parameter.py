"""TD123 tensor-attribute-not-parameter."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD123",
    name="tensor-attribute-not-parameter",
    category=Category.GRAD_FLOW,
    severity=Severity.ERROR,
    unsafe_fix=True,
    proof="lint",
    message="`self.{attribute}` is a plain tensor with requires_grad=True, not an nn.Parameter: the optimizer never sees it",
    hint="Wrap it: `self.{attribute} = nn.Parameter(torch.randn(...))`; use `register_buffer` for state that should not train.",
    sees={
        "lint": "`self.w = torch.ones(n, requires_grad=True)` instead of `nn.Parameter`",
        "run": "a tensor attribute with `requires_grad=True`: it gets gradients but no optimizer ever sees it",
    },
    doc="""
## What it does
Flags a tensor created with `requires_grad=True` (or `.requires_grad_()`) and assigned to an
attribute of an `nn.Module`, instead of being wrapped in `nn.Parameter`. A tensor that the
class itself hands to an optimizer (`torch.optim.RMSprop([self.lambda_op])`) is trained that
way and is not flagged, nor is `Variable(existing_tensor, requires_grad=True)`, the pre-0.4
way of asking for an input's gradient.

## Why is this bad?
Only `nn.Parameter` attributes are registered. A plain tensor with `requires_grad=True`
receives gradients, but `model.parameters()` does not list it, so the optimizer never
updates it; it is also not moved by `model.to(device)` and not saved in the `state_dict`.

## Example
```python
import torch
from torch import nn

class Scale(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.gain = torch.ones(n, requires_grad=True)

    def forward(self, x):
        return x * self.gain
```

Use instead:
```python
import torch
from torch import nn

class Scale(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return x * self.gain
```
""",
)
