"""TD490 gradients-exploding."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD490",
    name="gradients-exploding",
    category=Category.NUMERICS,
    severity=Severity.WARNING,
    proof="run",
    message="the gradient norm is exploding: {before:.3g} around steps {window} to {after:.3g} at step {step} (x{ratio:.3g}), rising at every step since step {since}; it starts in {where}",
    hint="Lower the learning rate (or warm it up), clip the gradients (`torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)` before `optimizer.step()`), and normalise the inputs; a NaN usually follows within a few steps.",
    doc="""
## What it does
Watches the norm of the gradients at every optimizer step (CPU parameters: one fused norm per
step) and reports a norm that has grown a thousandfold over its value ten to twenty steps
earlier and rose at each of the last three steps, with the numbers and the parameter where
the growth starts (the first whose own gradient grew a hundredfold). Large gradients in the
first steps, and single spikes that come back down, are not reported.

## Why is this bad?
Exploding gradients are the steps before a NaN: each update makes the next gradient larger
until the weights overflow. Caught while the numbers are still finite, the cause (a learning
rate that is too high, no clipping in a recurrent network, unnormalised inputs) is still easy
to see.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.3)  # far too high for this problem
x = torch.randn(256, 8) * 4
y = x.sum(dim=1, keepdim=True) ** 2
for _ in range(60):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(256, 8) * 4
y = x.sum(dim=1, keepdim=True) ** 2
for _ in range(60):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
```
""",
)
