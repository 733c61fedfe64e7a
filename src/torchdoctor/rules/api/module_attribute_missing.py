"""TD576 module-attribute-missing."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD576",
    name="module-attribute-missing",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="`{owner}` (a `{type}`) has no `{attribute}`: `{type}.__init__` creates it only when `{condition}` ({where}), which was false for this one",
    hint="Guard this use the way `__init__` guards the creation (the same condition, on what `__init__` stored), or create `{attribute}` in every case (`None` when unused) and test for that.",
    variants={
        "other-method": Variant(
            message="`{owner}` (a `{type}`) has no `{attribute}`: only its method `{method}` creates it ({where}), and that had not run on this object",
            hint="Call `{method}` before this line, or create `{attribute}` in `__init__` (`None` until `{method}` sets it) and test for that here.",
        ),
        "similar": Variant(
            message="`{owner}` (a `{type}`) has no `{attribute}`, and its class never creates it; it has `{similar}`",
            hint="Use the name the module has: `{owner}.{similar}`.",
        ),
    },
    sees={
        "run": "the crash \"'Net' object has no attribute 'x'\" on an nn.Module read by an attribute chain on the user's line, when the module's own classes create the attribute only under an `if` of `__init__`, only in another method, or never while a close name exists; at the user's line",
    },
    doc="""
## What it does
Explains the crash "AttributeError: 'ConvLoRA' object has no attribute 'lora_B'" on one of your
modules from the module's own class: `__init__` creates the attribute only under a condition
(`if r > 0:`) that was false for this object, or only another method creates it (one that had
not run), or the class never creates it but has a name close to it (`self.classifer`). It
points at the line that asked for it.

## Why is this bad?
nn.Module's message says only that the attribute is missing. A layer built optionally (an
adapter with rank 0, a head left out by a flag) is the common cause: the code that uses it was
written for the configuration where it exists, and fails, or worse, is skipped silently in
another.

## Example
```python
import torch
from torch import nn


class Adapter(nn.Module):
    def __init__(self, features, rank):
        super().__init__()
        self.base = nn.Linear(features, features)
        if rank > 0:
            self.down = nn.Linear(features, rank)
            self.up = nn.Linear(rank, features)

    def forward(self, x):
        return self.base(x) + self.up(self.down(x))


print(Adapter(8, rank=0)(torch.randn(2, 8)).shape)
```

Use instead:
```python
import torch
from torch import nn


class Adapter(nn.Module):
    def __init__(self, features, rank):
        super().__init__()
        self.rank = rank
        self.base = nn.Linear(features, features)
        if rank > 0:
            self.down = nn.Linear(features, rank)
            self.up = nn.Linear(rank, features)

    def forward(self, x):
        if self.rank == 0:
            return self.base(x)
        return self.base(x) + self.up(self.down(x))


print(Adapter(8, rank=0)(torch.randn(2, 8)).shape)
```
""",
)
