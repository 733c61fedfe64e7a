"""TD998 print-in-forward: the rule this plugin adds to the catalogue."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD998",
    name="print-in-forward",
    category=Category.PERFORMANCE,
    severity=Severity.INFO,
    proof="lint",
    message="`print()` in `forward`: it runs on every step",
    hint="Log outside the model, every N steps.",
    doc="""
## What it does
Flags `print()` called in the `forward` method of an `nn.Module`.

## Why is this bad?
It runs on every step and every micro-batch, and syncs with the device to format tensors.

## Example
```python
from torch import nn

class Net(nn.Module):
    def forward(self, x):
        print(x)
        return x
```

Use instead:
```python
from torch import nn

class Net(nn.Module):
    def forward(self, x):
        return x
```
""",
)
