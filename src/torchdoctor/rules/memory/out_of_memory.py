"""TD424 out-of-memory."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD424",
    name="out-of-memory",
    category=Category.MEMORY,
    severity=Severity.ERROR,
    proof="run",
    message="out of memory: {device} cannot allocate {want}{held}",
    hint="Reduce the batch size or the model, use mixed precision or activation checkpointing, and do not keep tensors with their graph across steps.",
    sees={
        "run": "out of memory (CUDA's message, `torch.OutOfMemoryError`, or the CPU allocator's \"can't allocate memory\"), with the breakdown at the failing line, the largest tensors and the line that makes them, fragmentation when the message shows it, and the cheapest fix whose estimated saving covers what was missing",
    },
    doc="""
## What it does
Explains "CUDA out of memory. Tried to allocate ..." and the CPU allocator's "can't allocate
memory" at the line that allocated, with what the observed models hold (parameters,
gradients, optimizer state), and whether the request itself is implausibly large (a shape
mistake) or memory is fragmented (reserved but unallocated).

## Why is this bad?
The message says how much was requested, not why memory is full. A single request larger
than the device is a shape bug; a full device calls for a smaller batch, mixed precision,
or finding the tensors kept alive across steps.

## Example
```python
import torch
from torch import nn

features = nn.Sequential(nn.Conv2d(3, 256, 3, padding=1), nn.ReLU())
head = nn.Linear(256 * 512 * 512, 4096)  # a 512x512 feature map, flattened
```

Use instead:
```python
import torch
from torch import nn

features = nn.Sequential(nn.Conv2d(3, 256, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
head = nn.Linear(256, 4096)
```
""",
)
