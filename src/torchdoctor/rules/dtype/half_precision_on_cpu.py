"""TD310 half-precision-on-cpu."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD310",
    name="half-precision-on-cpu",
    category=Category.DTYPE,
    severity=Severity.WARNING,
    proof="check",
    message="{number} parameter(s) are float16 on the CPU ({names}): CPU kernels for float16 are slow or missing, and float16 training without a GradScaler underflows",
    hint="Train on the CPU in float32 (or bfloat16 via `torch.autocast(\"cpu\", dtype=torch.bfloat16)`); keep float16 for the GPU, with autocast and a GradScaler.",
    doc="""
## What it does
Flags float16 (`torch.half`) parameters on the CPU.

## Why is this bad?
`model.half()` is a GPU habit. On the CPU many operations are much slower in float16 than in
float32, some are not implemented for it at all ("not implemented for 'Half'"), and pure
float16 training, without float32 master weights and loss scaling, loses small gradients and
updates to underflow. On a CPU, bfloat16 autocast is the supported reduced precision.

## Example
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).half()
    x, y = torch.randn(16, 8).half(), torch.arange(16) % 3
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```

Use instead:
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```
""",
)
