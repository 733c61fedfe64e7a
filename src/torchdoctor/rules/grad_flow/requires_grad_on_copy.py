"""TD169 requires-grad-on-copy."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD169",
    name="requires-grad-on-copy",
    category=Category.GRAD_FLOW,
    severity=Severity.WARNING,
    proof="lint",
    message="`{call}`: requires_grad is set before `.{method}()`, which returns a copy; the copy is not a leaf, so its .grad stays None and optimizers reject it",
    hint="Create the tensor where it should live and then ask for gradients: `torch.zeros(n, device=device, dtype=dtype, requires_grad=True)`.",
    sees={
        "lint": "`torch.randn(n, requires_grad=True).to(device)` (a non-leaf)",
    },
    doc="""
## What it does
Flags a tensor created with `requires_grad=True` (or `.requires_grad_()`) and then moved or
converted in the same expression: `torch.randn(3, requires_grad=True).cuda()`,
`.to(device)`, `.double()`, ... when the copy is used as a weight: returned, stored, collected,
given to an optimizer or read for its `.grad`. A copy used only as an input (`model(x)`, `x *
w`), whose own gradient nobody reads (a tensor that requires grad so that activation
checkpointing has something to differentiate), is not flagged; nor is a conversion to the
dtype the tensor already has (`torch.zeros(n, requires_grad=True).float()`), which returns the
tensor itself, still a leaf; nor a copy whose `.retain_grad()` the function calls (a non-leaf
kept on purpose, whose `.grad` is then filled).

## Why is this bad?
A move or a dtype conversion returns a new tensor computed *from* the trainable one, so the
variable holds a non-leaf: `.grad` stays `None` after backward() (with a warning about
"a Tensor that is not a leaf"), and `torch.optim.SGD([w])` raises "can't optimize a non-leaf
Tensor". (On a CPU-only run `.to("cpu")` returns the same tensor, which hides the bug until the
code runs on a GPU.) Verified on torch 2.13: `torch.randn(3, requires_grad=True).double().is_leaf`
is `False`.

## Example
```python
import torch

def make_weights(n, device):
    return torch.randn(n, requires_grad=True).to(device)
```

Use instead:
```python
import torch

def make_weights(n, device):
    return torch.randn(n, device=device, requires_grad=True)
```
""",
)
