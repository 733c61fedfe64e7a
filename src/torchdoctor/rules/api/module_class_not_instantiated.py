"""TD562 module-class-not-instantiated."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD562",
    name="module-class-not-instantiated",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="`{name}` is the class `{cls}`, not a model: calling it builds a new `{cls}` and hands the input to its `__init__`{crashed}",
    hint="Create the model once, with parentheses (`{name} = {cls}()`), then call it on the inputs: `{name}(x)`.",
    variants={
        "loss": Variant(
            message="`{name}` is the class `{cls}`, not a loss: calling it builds a new `{cls}` and hands your tensors to its `__init__`{crashed}",
            hint="Create the loss once, with parentheses (`{name} = {cls}()`), then call it on the output and the target: `{name}(output, target)`.",
        ),
    },
    sees={
        "run": "the crash \"Net.__init__() takes 1 positional argument but 2 were given\" of a model class called on its input through a name bound to the class itself, or any crash inside the `__init__` of a module or loss class called so (`criterion = nn.CrossEntropyLoss` then `criterion(out, y)`); at the line that bound it",
    },
    doc="""
## What it does
Explains the crash "Net.__init__() takes 1 positional argument but 2 were given" when the
name called on the input holds the model's class, not a model (`model = Net` instead of
`model = Net()`), and points at the line that bound it. The same for any crash raised inside
the class's `__init__` when it was called so: `criterion = nn.CrossEntropyLoss` then
`criterion(out, y)` hands `out` and `y` to the loss's `weight` and `size_average`, and fails
on torch 2.13 with "Boolean value of Tensor with more than one value is ambiguous".

## Why is this bad?
Calling a class constructs an instance: the input goes to `__init__`, and the message talks
about `__init__`, far from the missing parentheses. When `__init__` happens to accept the
argument, no error comes at all, and the "output" is a new, untrained module.

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


model = Net
out = model(torch.randn(8, 4))
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
out = model(torch.randn(8, 4))
```
""",
)
