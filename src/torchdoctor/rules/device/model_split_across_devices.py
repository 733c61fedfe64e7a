"""TD309 model-split-across-devices."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD309",
    name="model-split-across-devices",
    category=Category.DEVICE,
    severity=Severity.WARNING,
    proof="check",
    message="the model's parameters and buffers are on {devices}: {modules} on {minority}, the rest on {majority}",
    hint="Call `model.to(device)` after the model is complete (after replacing or loading layers); materialise `meta` parameters with `to_empty()` and load every weight.",
    doc="""
## What it does
Flags a model whose parameters and buffers are spread over the CPU and an accelerator (or the
`meta` device), naming the modules on the odd device out. Several GPUs (deliberate model
parallelism) are not flagged.

## Why is this bad?
A layer added or replaced after `model.to("cuda")`, a buffer created on the CPU inside
`__init__` with no registration, or a weight a partial checkpoint load left on `meta`: the first
forward pass fails with a device mismatch, or, where the model copies tensors across devices
itself, every step pays for the transfers.

## Example
```python
import torch
from torch import nn

def make():
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    checkpoint = {"0.weight": torch.randn(16, 8), "0.bias": torch.zeros(16)}
    model.load_state_dict(checkpoint, strict=False, assign=True)
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```

Use instead:
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    checkpoint = {"0.weight": torch.randn(16, 8), "0.bias": torch.zeros(16)}
    model.load_state_dict(checkpoint, strict=False)
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```
""",
)
