"""TD561 forward-arguments-mismatch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD561",
    name="forward-arguments-mismatch",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="{layer} is called with {count} positional inputs ({given}), more than its `forward{signature}` takes",
    hint="Give the model only what forward() takes (the labels go to the loss: `loss = criterion(model(x), y)`), or add a parameter to forward() for the extra input.",
    variants={
        # a parameter of forward() without a default got no argument
        "missing": Variant(
            message="{layer} is called with {given}, but its `forward{signature}` also needs {missing}",
            hint="Pass {missing} in the call, or give it a default in forward() (`{first}=None`) and handle its absence there.",
        ),
        # a keyword forward() does not have
        "keyword": Variant(
            message="{layer} is called with the keyword `{keyword}`, which its `forward{signature}` does not take",
            hint="Use one of forward()'s parameter names, or add `{keyword}` to forward() (a model from a library may name its inputs differently: check its forward's signature).",
        ),
    },
    sees={
        "run": "the crash of a module called with arguments its `forward()` does not take (\"forward() takes 2 positional arguments but 3 were given\", \"missing 1 required positional argument\", \"unexpected keyword argument\"), with forward's signature, at the call",
    },
    doc="""
## What it does
Explains the `TypeError` of a model called with arguments its `forward()` does not take:
too many positional inputs ("Net.forward() takes 2 positional arguments but 3 were given"), a
missing one ("missing 1 required positional argument: 'mask'") or an unknown keyword. It
names the model, what the call gave, and the signature of the `forward()` it reached.

## Why is this bad?
The message comes from inside `nn.Module.__call__`, and "2 positional arguments" counts
`self`, so it reads as one more than the inputs written in the call. The usual cause is the
labels passed to the model along with the inputs (`model(x, y)`), or a forward() that grew a
parameter its callers do not pass.

## Example
```python
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


model = Net()
x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))
loss = nn.functional.cross_entropy(model(x, y), y)
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


model = Net()
x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))
loss = nn.functional.cross_entropy(model(x), y)
```
""",
)
