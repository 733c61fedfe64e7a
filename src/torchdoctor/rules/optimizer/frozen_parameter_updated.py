"""TD116 frozen-parameter-updated."""

from itertools import combinations

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

#: why the step moved a frozen parameter, each a kebab name the detectors pick (run's
#: detectors/frozen.py, check's checks/step.py); a finding names every reason that holds
REASONS = {
    "stale-grad": "it still has a .grad tensor (left by `zero_grad(set_to_none=False)`, or set before it was frozen)",
    "weight-decay": "weight_decay={decay} applies to it",
    "momentum": "the optimizer keeps momentum for it from earlier steps",
}
MESSAGE = "frozen parameter {name} (requires_grad=False) was changed by optimizer.step(): "


def _joined(parts: tuple[str, ...]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def reasons_variant(reasons: list[str]) -> str | None:
    """The variant that names `reasons` (in REASONS' order); None when there are none."""
    return "-".join(name for name in REASONS if name in reasons) or None

RULE = Rule(
    code="TD116",
    name="frozen-parameter-updated",
    category=Category.OPTIMIZER,
    severity=Severity.ERROR,
    proof="check",
    message=MESSAGE + "the optimizer still holds it",
    hint="Give the optimizer only trainable parameters: `[p for p in model.parameters() if p.requires_grad]`, and reset stale gradients with `zero_grad(set_to_none=True)`.",
    variants={
        "-".join(names): Variant(message=MESSAGE + _joined(tuple(REASONS[name] for name in names)))
        for size in range(1, len(REASONS) + 1) for names in combinations(REASONS, size)
    },
    sees={
        "run": "a parameter with `requires_grad=False` that an optimizer step changes (it kept a `.grad`); reported at the optimizer's creation line",
    },
    doc="""
## What it does
Flags parameters with `requires_grad=False` that an optimizer step changes anyway. That
happens when a parameter was frozen after it had a gradient: `zero_grad(set_to_none=False)`
leaves a zero tensor in `.grad`, and weight decay or momentum then keep moving it.

## Why is this bad?
Optimizers skip parameters whose `.grad` is `None`, not parameters that are frozen. A zero
gradient is still a gradient: `AdamW(weight_decay=0.5)` moves such a weight from 1.0 to 0.95
in one step. The "frozen" backbone or embedding drifts silently.

## Example
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 3))
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1)
    model(torch.randn(2, 8)).sum().backward()
    optimizer.zero_grad(set_to_none=False)  # zero tensors stay in .grad
    model[0].requires_grad_(False)          # frozen afterwards
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}
```

Use instead:
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 3))
    model[0].requires_grad_(False)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=0.01, weight_decay=0.1)
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}
```
""",
)
