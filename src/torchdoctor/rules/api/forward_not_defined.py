"""TD572 forward-not-defined."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD572",
    name="forward-not-defined",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="`{cls}` has no `forward` method, so calling it fails: it defines `{method}` (line {line}), which reads like `forward` misspelt",
    hint="Rename `{method}` to `forward`: calling a module runs its `forward`.",
    variants={
        "nested": Variant(
            message="`{cls}` has no `forward` method, so calling it fails: the `forward` at line {line} is indented inside `{outer}`, which makes it a local function of `{outer}`, not a method",
            hint="Dedent `forward` to the level of `{outer}`, so that it is a method of `{cls}`.",
        ),
    },
    sees={
        "run": "the crash 'Module [Net] is missing the required \"forward\" function' when the class defines a method whose name is close to `forward` (`foward`, `forwad`, `Forward`) or has a `forward` indented inside another method; at the line that calls the model",
    },
    doc="""
## What it does
Explains the crash 'Module [Net] is missing the required "forward" function': finds the
method of the class that was meant to be `forward` (a misspelling such as `foward` or
`Forward`), or a `def forward` indented inside `__init__`, where it is a local function.

## Why is this bad?
Calling a module runs its `forward`; `nn.Module`'s own stands in when the class defines none
and raises `NotImplementedError` (on torch 2.13). The message names the class but not the
method that was meant, and a misspelt or mis-indented `forward` looks right at a glance.

## Example
```python
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def foward(self, x):
        return self.fc(x)

out = Net()(torch.randn(3, 4))
```

Use instead:
```python
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)

out = Net()(torch.randn(3, 4))
```
""",
)
