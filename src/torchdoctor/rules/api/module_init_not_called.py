"""TD422 module-init-not-called."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD422",
    name="module-init-not-called",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="{cls}.__init__ does not call super().__init__(), so the module cannot hold layers or parameters",
    hint="Call `super().__init__()` as the first line of `{cls}.__init__`.",
    doc="""
## What it does
Explains "cannot assign module before Module.__init__() call" (and the later
"object has no attribute '_backward_hooks'") at the `__init__` of the class that forgot to
call `super().__init__()`.

## Why is this bad?
`nn.Module.__init__` creates the dictionaries that hold submodules, parameters and hooks;
without it the first `self.layer = ...` fails.

## Example
```python
from torch import nn

class Net(nn.Module):
    def __init__(self):
        self.fc = nn.Linear(8, 2)

net = Net()
```

Use instead:
```python
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

net = Net()
```
""",
)
