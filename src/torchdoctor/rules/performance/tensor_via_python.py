"""TD162 tensor-via-python."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD162",
    name="tensor-via-python",
    category=Category.PERFORMANCE,
    severity=Severity.INFO,
    proof="lint",
    message="`{call}` copies a tensor through `.{via}()`: slow, and it drops the dtype, device and gradient of `{source}`",
    hint="Copy the tensor directly: `{source}.detach().clone()` (add `.to(dtype)` / `.to(device)` as needed).",
    sees={
        "lint": "`torch.tensor(x.tolist())`",
    },
    doc="""
## What it does
Flags `torch.tensor(x.tolist())`, `torch.tensor(x.numpy())` and the like: a tensor turned into
Python numbers (or a NumPy array) only to be turned back into a tensor.

## Why is this bad?
`.tolist()` creates one Python object per element and `torch.tensor` reads them back one by
one: for a million elements that is about a second instead of a millisecond. On a GPU tensor
it also forces a synchronising copy to the host and back. The result silently takes the
default dtype (int64 or float32) and lives on the CPU, and it no longer carries the autograd
history of the original.

## Example
```python
import torch

def snapshot(weights):
    return torch.tensor(weights.tolist())
```

Use instead:
```python
import torch

def snapshot(weights):
    return weights.detach().clone()
```
""",
)
