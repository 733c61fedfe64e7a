"""TD202 get-device-of-cpu-tensor."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD202",
    name="get-device-of-cpu-tensor",
    category=Category.DEVICE,
    severity=Severity.ERROR,
    proof="run",
    message="`{call}` is -1: `{name}` is on the CPU, and `get_device()` gives a CUDA device's index, or -1 for a CPU tensor, which is no device to move to",
    hint="Use the tensor's device itself: `.to({name}.device)` (or `device={name}.device`), which works on every device.",
    sees={
        "run": "the crash \"Device index must not be negative\" at a line that calls `x.get_device()` on a CPU tensor `x`; at that line",
    },
    doc="""
## What it does
Explains the crash "Device index must not be negative" when the device index came from
`x.get_device()` of a CPU tensor on the user's line.

## Why is this bad?
`get_device()` returns the index of a CUDA device, and -1 for a CPU tensor (on torch 2.13,
`torch.randn(2).get_device()` is -1), so code written on a GPU machine that moves tensors with
`.to(x.get_device())` fails on the CPU.

## Example
```python
import torch

x = torch.randn(3)
y = torch.zeros(3).to(x.get_device())
```

Use instead:
```python
import torch

x = torch.randn(3)
y = torch.zeros(3).to(x.device)
```
""",
)
