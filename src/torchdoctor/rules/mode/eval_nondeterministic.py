"""TD305 eval-nondeterministic."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD305",
    name="eval-nondeterministic",
    category=Category.MODE,
    severity=Severity.WARNING,
    proof="check",
    message="two forward passes in eval mode give different outputs (they differ by up to {difference:.3g}): {cause}",
    hint="Make randomness in forward() depend on self.training (`if self.training:` around noise, nn.Dropout instead of F.dropout), and register every dropout module.",
    doc="""
## What it does
Puts a copy of the model in eval mode and runs the same batch through it twice, without
gradients. The two outputs must agree; when they do not, the check says what it saw drawing
random numbers: functional dropout (TD130 has its own rule), an `nn.Dropout` that `eval()`
does not reach because it is not registered (TD122), or random noise added in `forward()`.

## Why is this bad?
Evaluation and inference should be deterministic. Randomness left on in eval mode makes
validation scores noisy and lower than they should be, and two predictions for the same input
disagree, with nothing raising an error.

## Example
```python
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        x = x + 0.1 * torch.randn_like(x)  # noise augmentation
        return self.fc(x)

def make():
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": Net(), "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```

Use instead:
```python
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        if self.training:
            x = x + 0.1 * torch.randn_like(x)  # noise augmentation
        return self.fc(x)

def make():
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": Net(), "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```
""",
)
