"""TD566 wrapped-model-attribute."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD566",
    name="wrapped-model-attribute",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="`{name}` is a `{wrapper}` around your `{model}`: the wrapper has no `{attribute}`, the model inside it does (`{name}.module.{attribute}`)",
    hint="Ask the wrapped model: `{name}.module.{attribute}` (keep a reference to the model before wrapping it, or unwrap with `getattr({name}, \"module\", {name})` where the code runs with and without the wrapper).",
    variants={
        "bare": Variant(
            message="`{name}` is a plain `{model}`, not a `DataParallel`/`DistributedDataParallel` wrapper, so it has no `.module`: this line was written for a wrapped model",
            hint="Unwrap only when wrapped: `getattr({name}, \"module\", {name})`, or wrap the model as the code expects.",
        ),
    },
    sees={
        "run": "the crash \"'DataParallel' object has no attribute 'fc'\" when the wrapped model has that attribute, and \"'Net' object has no attribute 'module'\" of an unwrapped model; at the user's line",
    },
    doc="""
## What it does
Explains the crash "AttributeError: 'DataParallel' object has no attribute 'fc'" (or
`DistributedDataParallel`) when the model inside the wrapper has that attribute, and "'Net'
object has no attribute 'module'" when code written for a wrapped model gets the plain one. It
points at the user's line.

## Why is this bad?
`nn.DataParallel(model)` and `DistributedDataParallel(model)` are new modules that hold the
model as `.module`; attribute access is not forwarded (torch 2.13 raises the AttributeError
above), so every `model.fc`, `model.classifier`, `model.config` of the training script breaks
when the model is wrapped, and every `model.module` breaks when it is not (one GPU, a CPU
debug run).

## Example
```python
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(x)


model = nn.DataParallel(Net())
print(model.fc.out_features)
```

Use instead:
```python
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(x)


model = nn.DataParallel(Net())
print(model.module.fc.out_features)
```
""",
)
