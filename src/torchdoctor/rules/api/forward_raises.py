"""TD300 forward-raises."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD300",
    name="forward-raises",
    category=Category.API,
    severity=Severity.ERROR,
    proof="check",
    message="the model's {stage} raises {error}",
    hint="Fix the line shown; the sizes and dtypes of the batch are in the message. The other checks ran as far as they could without a forward pass.",
    variants={
        # the module that raised is known: a submodule, or the model itself
        "in-module": Variant(message="the model's {stage} raises {error} in `{module}` ({type})"),
        "in-model": Variant(message="the model's {stage} raises {error} in the model"),
        # ...and it is a Linear layer given the wrong number of input features
        "in-module-features": Variant(message="the model's {stage} raises {error} in `{module}` ({type}): it expects {features} input features and gets {got}"),
        "in-model-features": Variant(message="the model's {stage} raises {error} in the model: it expects {features} input features and gets {got}"),
    },
    doc="""
## What it does
Runs the model on one batch of its own data, in training mode, and reports an exception raised
by the forward pass (or by backward through it), at the user's line that raised it, or at the
line that created the module that raised it.

## Why is this bad?
The training script would crash at its first step. The raw traceback ends deep inside torch
("mat1 and mat2 shapes cannot be multiplied (32x64 and 32x10)") and does not say which of your
layers was given what. The check names the module and its line, and keeps checking what it
can without a forward pass (registration, optimizer coverage, DataLoader).

## Example
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(32, 10))
    x, y = torch.randn(16, 20), torch.arange(16) % 10
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```

Use instead:
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 10))
    x, y = torch.randn(16, 20), torch.arange(16) % 10
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```
""",
)
