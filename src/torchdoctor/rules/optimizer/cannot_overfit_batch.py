"""TD304 cannot-overfit-batch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD304",
    name="cannot-overfit-batch",
    category=Category.OPTIMIZER,
    severity=Severity.WARNING,
    proof="check",
    message="the loss on one batch of {samples} samples stops falling far from zero with {optimizer}: {curve}",
    hint="A model that cannot memorise a handful of samples has a bug between output and loss, or an optimizer that barely moves it: see the other findings, and check the learning rate.",
    variants={
        # the model's optimizer is slow where Adam(lr=0.001) halves the loss: the optimizer's settings
        "adam-overfits": Variant(message="the loss on one batch of {samples} samples stops falling with {optimizer}: {curve}; Adam(lr=0.001) halves it ({adam_curve}): the learning rate or weight decay is likely off (expected during a warm-up that starts near 0)"),
        # the same, Adam(lr=0.001) still lowering the loss
        "adam-still-falling": Variant(message="the loss on one batch of {samples} samples stops falling with {optimizer}: {curve}; Adam(lr=0.001) keeps lowering it ({adam_curve}): the learning rate or weight decay is likely off (expected during a warm-up that starts near 0)"),
    },
    doc="""
## What it does
Trains a copy of the model on one small batch (up to 8 samples) for a number of steps with your
optimizer (300, fewer for a model whose step costs more than a third of a GFLOP: the budget is
counted in steps and operations, never in seconds, so a busy machine gets the same verdict), and
reports a loss that stops falling (over the last third of the steps it improves by less than 2%
of its first value) before reaching half its first value, with the loss curve. A loss still
falling when the budget runs out is inconclusive and not reported.
When your optimizer gets stuck, it retries with `Adam(lr=1e-3)`: if that does better the
finding is `info` and blames the optimizer settings (a learning rate far too small, a huge
weight decay); if it gets stuck too, something between the model and the loss is broken.

## Why is this bad?
Any working model can memorise a handful of samples. When it cannot, full training will not
work either, and hours of compute later the symptom is only "the loss does not go down".
This check turns that into a result within seconds. (A learning-rate warm-up that starts
near zero also trips it: then the finding is expected.)

## Example
```python
import torch
from torch import nn

def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-5)
    x, y = torch.randn(16, 16), torch.arange(16) % 4
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}
```

Use instead:
```python
import torch
from torch import nn

def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.randn(16, 16), torch.arange(16) % 4
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}
```

## References
- A. Karpathy, [A Recipe for Training Neural Networks](https://karpathy.github.io/2019/04/25/recipe/): "overfit one batch"
""",
)
