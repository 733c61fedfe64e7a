"""TD146 unintended-float64."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD146",
    name="unintended-float64",
    category=Category.DTYPE,
    severity=Severity.WARNING,
    proof="check",
    message="{what} is float64 while {other} is float32: {consequence}",
    hint="Convert once at the source: `torch.from_numpy(a).float()`, `np.float32` arrays, or `.to(torch.float32)` in the dataset; call `model.double()` only when you mean double precision everywhere.",
    sees={
        "run": "a float64 target or model output beside float32 weights; float64 parameters beside float32 ones; reported at the loss call / the forward that promotes / the parameter's line",
    },
    doc="""
## What it does
Flags float64 tensors mixed into float32 training: float64 inputs or targets for a float32
model, or float64 parameters beside float32 ones. A model that is float64 throughout, with
float64 inputs, is treated as deliberate and not flagged.

## Why is this bad?
NumPy and pandas default to float64, `torch.from_numpy` keeps it, and the default collate turns
Python floats into float64. Fed to a float32 layer this raises "mat1 and mat2 must have the
same dtype, but got Double and Float"; mixed into the model it runs many times slower on a
GPU, and wastes memory everywhere.

## Example
```python
import numpy as np
import torch
from torch import nn

def make():
    features = np.random.default_rng(0).normal(size=(16, 4))  # float64
    x, y = torch.from_numpy(features), torch.arange(16) % 3
    return {"model": nn.Linear(4, 3), "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```

Use instead:
```python
import numpy as np
import torch
from torch import nn

def make():
    features = np.random.default_rng(0).normal(size=(16, 4))
    x, y = torch.from_numpy(features).float(), torch.arange(16) % 3
    return {"model": nn.Linear(4, 3), "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```
""",
)
