"""TD414 view-of-non-contiguous."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD414",
    name="view-of-non-contiguous",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="`.view()` cannot reshape {tensor}: it is not contiguous in memory{origin}",
    hint="Use `.reshape(...)`, which copies only when it must, or `.contiguous().view(...)`; after a permute, check that the dimension order is the one you mean.",
    doc="""
## What it does
Explains the crash "view size is not compatible with input tensor's size and stride" at the
`.view()` call, naming the tensor and the operation that made it non-contiguous (transpose,
permute, expand, slicing) when it can tell.

## Why is this bad?
`.view()` never copies: it only reinterprets memory, which is impossible for a tensor whose
elements are no longer laid out in order. `.reshape()` copies when needed.

## Example
```python
import torch

images = torch.randn(4, 3, 8, 8)
channels_last = images.permute(0, 2, 3, 1)
flat = channels_last.view(4, -1)
```

Use instead:
```python
import torch

images = torch.randn(4, 3, 8, 8)
channels_last = images.permute(0, 2, 3, 1)
flat = channels_last.reshape(4, -1)
```
""",
)
