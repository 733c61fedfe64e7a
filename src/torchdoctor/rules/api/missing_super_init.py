"""TD158 missing-super-init."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD158",
    name="missing-super-init",
    category=Category.API,
    severity=Severity.ERROR,
    proof="lint",
    message="`{cls}.__init__` never calls `super().__init__()`: the module has no parameter, buffer or hook tables",
    hint="Call `super().__init__()` as the first line of `__init__`, before assigning any layer.",
    sees={
        "lint": "an nn.Module `__init__` without `super().__init__()`",
    },
    doc="""
## What it does
Flags an `nn.Module` subclass whose `__init__` does not call the base class's `__init__`
(`super().__init__()`, `super(Net, self).__init__()` or `nn.Module.__init__(self)`).

## Why is this bad?
`nn.Module.__init__` creates the tables that hold parameters, buffers, submodules and hooks.
Without it, assigning a layer raises "cannot assign module before Module.__init__() call", and
a module with no layers fails at its first call with "'Net' object has no attribute
'_backward_hooks'". The message does not say what is missing.

## Example
```python
from torch import nn

class Net(nn.Module):
    def __init__(self):
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)
```

Use instead:
```python
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)
```
""",
)
