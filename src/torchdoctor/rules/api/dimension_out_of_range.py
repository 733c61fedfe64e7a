"""TD570 dimension-out-of-range."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD570",
    name="dimension-out-of-range",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="`{call}` asks for dimension {dim} of `{name}`, which has shape {shape}: {ndim} dimension(s), so dimensions {low} to {high}",
    hint="`{name}` has fewer dimensions than this line expects: a batch dimension is often missing (one sample: `{name}.unsqueeze(0)`) or was squeezed away (`.squeeze()` without a dim drops a batch of one); print `{name}.shape` where it is made, or use `dim=-1` for the last dimension.",
    sees={
        "run": "the crash \"Dimension out of range (expected to be in range of [-1, 0], but got 1)\" at a call on the user's line that passes that dimension for a variable of that many dimensions (`torch.max(out, 1)`, `x.softmax(dim=1)`, `x.size(2)`); at that line",
    },
    doc="""
## What it does
Explains the crash "IndexError: Dimension out of range (expected to be in range of [-1, 0],
but got 1)": names the call on the user's line that asks for that dimension, and the variable
it asks of, with its shape.

## Why is this bad?
torch's message gives the range and the dimension but neither the tensor nor its shape. The
usual cause is a tensor with one dimension less than the code was written for: one sample
without its batch dimension, or a batch of one squeezed away.

## Example
```python
import torch

logits = torch.randn(3)  # one sample's scores, no batch dimension
_, predicted = torch.max(logits, 1)
```

Use instead:
```python
import torch

logits = torch.randn(3).unsqueeze(0)  # a batch of one
_, predicted = torch.max(logits, 1)
```
""",
)
