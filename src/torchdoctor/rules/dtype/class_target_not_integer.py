"""TD106 class-target-not-integer."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD106",
    name="class-target-not-integer",
    category=Category.DTYPE,
    severity=Severity.ERROR,
    proof="check",
    message="{loss} gets class targets of dtype {dtype}; class indices must be int64 (torch.long)",
    hint="Convert the labels with `y.long()` (or build them as int64); float targets of the same shape as the input mean class probabilities.",
    variants={
        # the labels were converted at a line run found (`{made}` says where)
        "converted": Variant(message="{loss} gets class targets of dtype {dtype}; class indices must be int64 (torch.long){made}", hint="`{conversion}` makes the labels {made_dtype}: keep them int64 (drop the conversion, or `.long()`)."),
    },
    doc="""
## What it does
Flags class-index targets (one label per sample, shape `(N,)` or `(N, d1, ...)`) of a
floating or other non-`int64` dtype given to `CrossEntropyLoss` or `NLLLoss`.

## Why is this bad?
The loss raises "expected target dtype to be Long or Byte, but got Float" (or, worse, a
same-shape float target is read as class probabilities). Labels usually become float when
they come from NumPy/pandas or when the default collate turns Python floats into float64.

## Example
```python
import torch
from torch import nn

def make():
    model = nn.Linear(8, 3)
    x, y = torch.randn(16, 8), (torch.arange(16) % 3).float()
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```

Use instead:
```python
import torch
from torch import nn

def make():
    model = nn.Linear(8, 3)
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```
""",
)
