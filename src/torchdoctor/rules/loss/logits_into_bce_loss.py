"""TD108 logits-into-bce-loss."""

from typing import Any

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

#: what PyTorch raises when BCELoss gets a value outside [0, 1]: on the CPU, and on a GPU (a
#: device-side assertion, after which the scores can no longer be read)
CPU_ERROR = "all elements of input should be between 0 and 1"
GPU_ERROR = "input_val >= zero && input_val <= one"


def scores_text(scores: Any) -> str:
    """The message's `{values}` for a tensor of scores: their range."""
    return f"values from {float(scores.min()):.3g} to {float(scores.max()):.3g}"


RULE = Rule(
    code="TD108",
    name="logits-into-bce-loss",
    category=Category.LOSS,
    severity=Severity.ERROR,
    proof="run",
    message="BCELoss needs probabilities in [0, 1] but gets {values}: raw scores (logits), with no sigmoid before the loss",
    hint="Use `nn.BCEWithLogitsLoss()` on the raw outputs (it applies the sigmoid itself, in a numerically stable way), or apply `torch.sigmoid` before `BCELoss`.",
    sees={
        "lint": "`BCELoss` / `F.binary_cross_entropy` fed the output of an `nn.Sequential` whose last layer is a `Linear`/`Conv` (raw scores)",
    },
    doc="""
## What it does
Explains the crash "all elements of input should be between 0 and 1" of `nn.BCELoss` /
`F.binary_cross_entropy` (on a GPU: the device-side assertion `input_val >= zero && input_val
<= one`), with the range of values it got: `torchdoctor run` at the line of your loss call,
`torchdoctor check` at the line that builds the loss. Lint flags it before anything runs when
the model is an `nn.Sequential` whose last layer is a `Linear` or a convolution.

## Why is this bad?
`BCELoss` takes probabilities. A model whose last layer is a `Linear` produces raw scores of
any sign, and the first batch with a value outside [0, 1] stops training (on a GPU, with an
opaque device-side assert that poisons the CUDA context). Adding a sigmoid makes it run but is
numerically weaker than `BCEWithLogitsLoss`, which takes the raw scores.

## Example
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
loss_fn = nn.BCELoss()
x, y = torch.randn(32, 8), torch.randint(0, 2, (32, 1)).float()
loss_fn(model(x), y).backward()
```

Use instead:
```python
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
loss_fn = nn.BCEWithLogitsLoss()
x, y = torch.randn(32, 8), torch.randint(0, 2, (32, 1)).float()
loss_fn(model(x), y).backward()
```
""",
)
