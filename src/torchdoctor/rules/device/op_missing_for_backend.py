"""TD431 op-missing-for-backend."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD431",
    name="op-missing-for-backend",
    category=Category.DEVICE,
    severity=Severity.ERROR,
    proof="run",
    message="{op} has no kernel for the {key} backend{tensor}: in this torch it has kernels for {backends}",
    hint="Give the op a tensor of a backend it has a kernel for.",
    doc="""
## What it does
Explains the crash "Could not run 'aten::...' with arguments from the '...' backend" at the
line of your code that made the call: it names the op, the backend whose kernel is missing
(the tensor's layout or device: sparse, quantized, nested, MPS, meta), the tensor, and the
backends the installed torch does have a kernel of that op for, read from its dispatcher.

## Why is this bad?
Every op is a table of kernels, one per backend. Sparse, quantized and nested tensors, and
devices such as MPS, have kernels for only part of the ops; calling another one fails. The
error lists every dispatch key the op is registered for, most of them not backends at all,
which makes it hard to see what would work.

## Example
```python
import torch

scores = torch.randn(4, 4).relu().to_sparse()  # a sparse matrix
flat = scores.view(16)
```

Use instead:
```python
import torch

scores = torch.randn(4, 4).relu().to_sparse()
flat = scores.to_dense().view(16)
```
""",
)
