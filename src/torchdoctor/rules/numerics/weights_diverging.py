"""TD491 weights-diverging."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD491",
    name="weights-diverging",
    category=Category.NUMERICS,
    severity=Severity.WARNING,
    proof="run",
    message="the weights {how}: their norm went from {before:.3g} at step {first} to {after:.3g} at step {step} (x{ratio:.3g})",
    hint="{remedy}",
    doc="""
## What it does
Measures the norm of all trained weights now and then (before the first step, then at steps
2 to 4 and every 16 steps; CPU parameters) and reports, during the first 500 optimizer steps,
weights that grew a hundredfold, or (during the first 200) shrank to a twentieth, with the
numbers. Slow growth or shrinkage over a long run is not reported.

## Why is this bad?
Weights that blow up come from a learning rate far too high (or a loss whose sign is wrong);
weights that collapse to zero come from weight decay far too strong for the learning rate,
or from gradients that only ever push down. Either way the model stops learning long
before a NaN or an error shows.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(16, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=9.0)  # meant 9e-4
x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
for _ in range(80):
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(16, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=9e-4)
x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
for _ in range(80):
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
```
""",
)
