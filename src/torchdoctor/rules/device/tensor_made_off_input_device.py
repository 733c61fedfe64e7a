"""TD203 tensor-made-off-input-device."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD203",
    name="tensor-made-off-input-device",
    category=Category.DEVICE,
    severity=Severity.WARNING,
    proof="lint",
    message=("`{name}` is made on the CPU (`{factory}` without `device=`) and meets {other} at line {use}"
             ": when `{input}` is on a GPU that line fails with \"Expected all tensors "
             "to be on the same device\""),
    hint="Make it where the input is: pass `device={input}.device` (or use `{input}.new_zeros(...)`, `torch.zeros_like({input})`).",
    sees={
        "lint": "in a method of an nn.Module, or a function that places tensors itself (`.to(...)`, `.cuda()`, `device=`, `.device`), a tensor of at least one dimension made by a torch factory (`zeros`, `ones`, `arange`, `tensor([...])`, ...) without `device=`, bound to a name once, that then meets a tensor computed from a tensor parameter in an arithmetic or comparison operator, `torch.cat`/`stack`/`where` or `masked_fill`; points at the line that makes it. Left alone: 0-dim tensors, names moved later or that something is moved to (`x.to(mask.device)`), indexing with them, the input's shape or CPU copy, a file that never speaks of devices or sets a default one",
    },
    doc="""
## What it does
Flags a tensor made with a torch factory (`torch.zeros`, `torch.ones`, `torch.arange`,
`torch.tensor([...])`, ...) without `device=` inside code meant for any device (a method of an
`nn.Module`, or a function that moves tensors itself), when it then meets the function's input
in an operation: `+`, `*`, a comparison, `torch.cat`, `torch.where`, `masked_fill`. It points
at the line that makes the tensor. Only files that speak of devices (`device`, `.cuda(`) are
read, and not those that set a default device (`torch.set_default_device`, `with
torch.device(...)`), where factories may not make tensors on the CPU.

## Why is this bad?
A factory without `device=` makes its tensor on the CPU. On a CPU-only machine the code works;
once the model and its inputs are moved to a GPU, the operation raises "Expected all tensors to
be on the same device, but found at least two devices, cuda:0 and cpu!". The bug hides until the
code first runs on an accelerator, often in someone else's hands. Only a 0-dim CPU tensor (a
scalar) may meet a GPU tensor.

## Example
```python
import torch
from torch import nn


class WithAngles(nn.Module):
    def forward(self, boxes):
        angles = torch.zeros(boxes.shape[0], 1, dtype=boxes.dtype)
        return torch.cat((boxes.clone(), angles), dim=1)


device = "cuda" if torch.cuda.is_available() else "cpu"
model = WithAngles().to(device)
```

Use instead:
```python
import torch
from torch import nn


class WithAngles(nn.Module):
    def forward(self, boxes):
        angles = torch.zeros(boxes.shape[0], 1, dtype=boxes.dtype, device=boxes.device)
        return torch.cat((boxes.clone(), angles), dim=1)


device = "cuda" if torch.cuda.is_available() else "cpu"
model = WithAngles().to(device)
```
""",
)
