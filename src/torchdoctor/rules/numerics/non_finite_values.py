"""TD145 non-finite-values."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD145",
    name="non-finite-values",
    category=Category.NUMERICS,
    severity=Severity.ERROR,
    proof="check",
    message="{what} contains NaN or Inf, first produced by {origin}",
    hint="Look at the named op's inputs: typical causes are log(0), division by zero, sqrt of a negative, exp overflow, or a learning rate that is too high.",
    sees={
        "run": "the first NaN/Inf: the aten op and line that made it from finite inputs, what its inputs show (`log` of 0, `sqrt` of a negative, `exp` overflow, division by 0, a softmax row of `-inf` with the line of the mask, float16 past 65504) and the fix; gradients that are not finite are caught before `optimizer.step()` applies them and named by the forward op whose backward made them, in the model or in the code between its output and the loss (or: the data, or an earlier poisoned update, or the loss code)",
    },
    doc="""
## What it does
Flags NaN or infinite values in the inputs, outputs, loss, gradients or parameters, and names
the first module (or op, and its source line) that produced one.

## Why is this bad?
One NaN spreads to every weight after a single optimizer step, and the loss prints `nan`
from then on. By the time you look, the place it came from is long gone; the first producer
(a `log` of zero, a division by a zero norm, an overflow in half precision) is where the fix is.

## Example
```python
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(torch.log(x))

def make():
    x, y = torch.rand(8, 4) - 0.5, torch.arange(8) % 3  # negative inputs
    return {"model": Net(), "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```

Use instead:
```python
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(torch.log(x.clamp_min(1e-6)))

def make():
    x, y = torch.rand(8, 4) - 0.5, torch.arange(8) % 3
    return {"model": Net(), "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```
""",
)
