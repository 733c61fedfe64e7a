"""TD102 sigmoid-before-bce-with-logits."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD102",
    name="sigmoid-before-bce-with-logits",
    category=Category.LOSS,
    severity=Severity.ERROR,
    proof="lint",
    message="BCEWithLogitsLoss receives probabilities: its input comes from {source}",
    hint="Pass the raw logits to BCEWithLogitsLoss (it applies sigmoid itself), or keep the sigmoid and use BCELoss.",
    sees={
        "lint": "sigmoid output fed to `BCEWithLogitsLoss`",
        "run": "sigmoid into `BCEWithLogitsLoss`, read from the loss input's autograd node; reported at the sigmoid's line (or the model's `nn.Sigmoid` layer)",
    },
    doc="""
## What it does
Flags a sigmoid (`torch.sigmoid`, `F.sigmoid`, `Tensor.sigmoid`, or an `nn.Sigmoid` as the
model's last layer) whose output is passed to `nn.BCEWithLogitsLoss` /
`F.binary_cross_entropy_with_logits`.

## Why is this bad?
`BCEWithLogitsLoss` applies the sigmoid itself. The sigmoid of a probability lies in
[0.5, 0.73], so a perfectly confident positive still costs 0.313 and the gradients are weak:
the loss stalls and nothing warns you.

## Example
```python
import torch
from torch import nn

criterion = nn.BCEWithLogitsLoss()

def train_step(model, x, y, optimizer):
    loss = criterion(torch.sigmoid(model(x)), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
```

Use instead:
```python
import torch
from torch import nn

criterion = nn.BCEWithLogitsLoss()

def train_step(model, x, y, optimizer):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
```

## References
- [`torch.nn.BCEWithLogitsLoss`](https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html)
""",
)
