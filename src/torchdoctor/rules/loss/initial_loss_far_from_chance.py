"""TD303 initial-loss-far-from-chance."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD303",
    name="initial-loss-far-from-chance",
    category=Category.LOSS,
    severity=Severity.WARNING,
    proof="check",
    message="the initial loss is {loss:.3g}, far above {chance_name} = {chance:.3g} (an uninformed guess over {classes} classes): the logits reach {logit:.3g}{cause}",
    hint="Normalise the inputs (e.g. pixels / 255, then mean/std) and keep the default initialisation of the last layer, so that the first predictions are close to uniform.",
    doc="""
## What it does
For a `C`-class `CrossEntropyLoss` (or `BCEWithLogitsLoss`, `C = 2`), compares the loss of the
untrained model on one batch with `ln(C)`, the loss of a uniform guess, and reports a first
loss more than twice that (and at least 1 above it), with the numbers and the largest logit.
A first loss *below* `ln(C)` (a pretrained model) is fine.

## Why is this bad?
A freshly initialised classifier should be unsure of everything. A first loss of 40 instead of
2.3 means huge logits: inputs in 0..255 instead of around 0, or a last layer initialised too
large. The softmax saturates, most gradients vanish, and the first hundreds of steps only
undo the bad start, if training recovers at all.

## Example
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    images = torch.randint(0, 256, (16, 1, 8, 8)).float()  # raw pixels
    labels = torch.arange(16) % 10
    return {"model": model, "data": (images, labels), "loss_fn": nn.CrossEntropyLoss()}
```

Use instead:
```python
import torch
from torch import nn

def make():
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    images = torch.randint(0, 256, (16, 1, 8, 8)).float() / 255
    labels = torch.arange(16) % 10
    return {"model": model, "data": (images, labels), "loss_fn": nn.CrossEntropyLoss()}
```

## References
- A. Karpathy, [A Recipe for Training Neural Networks](https://karpathy.github.io/2019/04/25/recipe/): "verify loss @ init"
""",
)
