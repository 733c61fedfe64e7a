"""TD571 reshape-size-mismatch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD571",
    name="reshape-size-mismatch",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="`{call}` asks for shape {shape}, which holds {want} values, but `{name}` has shape {have_shape}: {have} values",
    hint="Ask for a shape of {have} values (one dimension may be -1 and is then inferred), or reshape the tensor that has the size you meant.",
    variants={
        "inferred": Variant(
            message="`{call}` asks for shape {shape}: its given dimensions hold {known} values, which do not divide the {have} values of `{name}` (shape {have_shape})",
            hint="Give dimensions whose product divides {have}, or reshape the tensor that has the size you meant.",
        ),
    },
    sees={
        "run": "the crash \"shape '[4, 2]' is invalid for input of size 6\" of `x.view(...)`, `x.reshape(...)` or `torch.reshape(x, ...)` on the user's line, when `x` is a variable (or attribute) holding that many values: the shape asked for and the tensor's shape (a flatten of a batch before a Linear is TD417's); at that line",
    },
    doc="""
## What it does
Explains the crash "shape '[4, 2]' is invalid for input of size 6" of `view`/`reshape`: names
the tensor on the user's line, its shape, and how many values the shape asked for holds (or,
with a `-1`, the product of the given dimensions that does not divide the tensor's size). A
flatten of a batch before a Linear (`x.view(-1, 320)` on an `(N, C, H, W)` tensor) is
explained by TD417, with the size per sample the Linear must take.

## Why is this bad?
torch gives only the total size of the input: which tensor on the line, and what shape it has,
is left to the reader (on torch 2.13, `torch.arange(6).reshape(4, 2)` raises the error above).
The usual causes are a shape written for another batch or sequence length, or the wrong tensor
reshaped.

## Example
```python
import torch

steps = torch.arange(6)
pairs = steps.reshape(4, 2)
```

Use instead:
```python
import torch

steps = torch.arange(8)
pairs = steps.reshape(4, 2)
```
""",
)
