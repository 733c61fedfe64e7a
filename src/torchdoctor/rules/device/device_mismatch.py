"""TD410 device-mismatch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD410",
    name="device-mismatch",
    category=Category.DEVICE,
    severity=Severity.ERROR,
    proof="run",
    message="{first} is on {first_device} but {second} is on {second_device}{where}",
    hint="Put the model and every tensor it meets on one device: `model.to(device)` once, `.to(device)` for each batch, `device=` for tensors you create.",
    doc="""
## What it does
Explains the crash "Expected all tensors to be on the same device" (and its variants) at the
line of your code that made the failing call, naming the two tensors by their variable or
parameter names and their devices.

## Why is this bad?
An operation needs all its tensors on one device. The usual causes are a batch not moved with
`.to(device)`, a tensor created inside `forward` without `device=`, a layer created after
`model.to(device)` or kept in a plain Python list (not moved with the model), and a loss
weight tensor left on the CPU.

## Example
```python
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "meta"  # "meta" stands in for a GPU here
model = nn.Linear(8, 2).to(device)
x = torch.randn(4, 8)
out = model(x)
```

Use instead:
```python
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "meta"
model = nn.Linear(8, 2).to(device)
x = torch.randn(4, 8, device=device)
out = model(x)
```
""",
)
