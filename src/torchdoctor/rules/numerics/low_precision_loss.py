"""TD493 loss-in-low-precision."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD493",
    name="loss-in-low-precision",
    category=Category.NUMERICS,
    severity=Severity.INFO,
    proof="run",
    message="the loss backpropagated here is {dtype}: it keeps about {digits} significant digits, so changes smaller than {resolution:.1g} of its value do not show and its gradient starts rounded",
    hint="Compute the loss in float32: `loss_fn(output.float(), target)` (under `torch.autocast` the usual losses already run in float32).",
    doc="""
## What it does
Reports a `backward()` whose loss is a float16 or bfloat16 tensor: the loss was reduced (a
mean or a sum over the batch) in half precision, typically because the model was cast with
`.half()` / `.to(torch.bfloat16)` and the loss computed outside `torch.autocast`.

## Why is this bad?
bfloat16 keeps 8 bits of mantissa (about 3 significant digits), float16 11 bits: the loss
curve moves in steps, late improvements are below its resolution, and the gradient leaving
the loss is rounded before backpropagation starts. It is a deliberate choice in some
setups, hence information, not a warning.

## Example
```python
import torch
from torch import nn

model = nn.Linear(8, 1).to(torch.bfloat16)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(64, 8, dtype=torch.bfloat16)
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
    loss.backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

model = nn.Linear(8, 1).to(torch.bfloat16)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(64, 8, dtype=torch.bfloat16)
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x).float(), x.sum(dim=1, keepdim=True).float())
    loss.backward()
    optimizer.step()
```
""",
)
