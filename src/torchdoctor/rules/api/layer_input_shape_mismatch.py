"""TD417 layer-input-shape-mismatch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD417",
    name="layer-input-shape-mismatch",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="{layer} expects {expected} but gets {got}",
    hint="Make the layer's input size match what the layer before it produces (print the shapes once), or use a lazy layer (`nn.LazyLinear`) that infers it.",
    doc="""
## What it does
Explains shape crashes between layers, "mat1 and mat2 shapes cannot be multiplied (64x512
and 256x10)" and "expected input[...] to have 3 channels, but got 224 channels instead", by
naming the layer (`Linear` `fc`), what it was built for (`in_features=256`) and what it got.
For convolutions it recognises channels-last images.

## Why is this bad?
The raw message gives matrix sizes, not layers. The cause is usually an `in_features`
computed for another input size (after flatten), or images in (N, H, W, C) layout.

## Example
```python
import torch
from torch import nn

model = nn.Sequential(
    nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(),
    nn.Linear(8 * 32 * 32, 10),
)
out = model(torch.randn(2, 3, 32, 32))
```

Use instead:
```python
import torch
from torch import nn

model = nn.Sequential(
    nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(),
    nn.Linear(8 * 30 * 30, 10),
)
out = model(torch.randn(2, 3, 32, 32))
```
""",
)
