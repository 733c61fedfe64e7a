"""TD492 grad-scaler-skipping-steps."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD492",
    name="grad-scaler-skipping-steps",
    category=Category.NUMERICS,
    severity=Severity.WARNING,
    proof="run",
    message="GradScaler skipped {skipped} of {steps} optimizer steps because the gradients had Inf/NaN (float16 overflow); its scale is now {scale:g}",
    hint="A few skipped steps while the scale calibrates are normal; this many means an op overflows float16 (values above 65504) every few steps: use bfloat16 autocast (float32's range), compute the overflowing part in float32, or lower the learning rate.",
    doc="""
## What it does
Counts the `scaler.step(optimizer)` calls whose optimizer step GradScaler skipped because the
scaled gradients contained Inf or NaN, and reports when more than ten steps and more than a
tenth of all steps were skipped, with the scaler's final scale.

## Why is this bad?
Each skipped step is a batch the model does not learn from, and nothing is printed. A scale
that keeps falling means float16 overflows in the forward or backward pass at every few
steps, not once at start-up.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
for step in range(60):
    optimizer.zero_grad()
    loss = (model(torch.randn(32, 8)) * 1e6).pow(2).mean()  # overflows float16 once scaled
    scaler.scale(loss.half()).backward()
    scaler.step(optimizer)
    scaler.update()
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
for step in range(60):
    optimizer.zero_grad()
    loss = model(torch.randn(32, 8)).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
```
""",
)
