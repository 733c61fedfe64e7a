"""TD181 softmax-over-batch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD181",
    name="softmax-over-batch",
    category=Category.LOSS,
    severity=Severity.WARNING,
    proof="lint",
    fixable=False,
    message="`{call}` normalises the model's output over dim 0, the batch (or node) axis, not over the classes",
    hint="Normalise over the class axis (`dim=-1`, or `dim=1` for (N, C, ...) outputs); with CrossEntropyLoss return the raw logits.",
    sees={
        "lint": "a module's `forward` returns `F.log_softmax(x, dim=0)` (or `x.log_softmax(0)`): the output normalised over the batch (node) axis instead of the classes (`softmax(dim=0)`, which a policy over one unbatched observation returns correctly, and softmax over dim 0 inside the model, an attention over sequence-first positions, are left alone)",
    },
    doc="""
## What it does
Flags a module's `forward` that returns `F.log_softmax(x, dim=0)` (or `x.log_softmax(0)`):
the log-probabilities a loss or a prediction reads are normalised across the samples of the
batch (the nodes of a graph), not across the classes. A `softmax(x, dim=0)` is left alone: a
policy called on one unbatched observation returns exactly that, correctly.

## Why is this bad?
A classifier's output is (batch, classes). Over dim 0 each class's column sums to one across
the batch: the log-probabilities of one sample depend on the other samples, `argmax` over the
classes picks nonsense, and NLL trains each class to win over the batch rather than over the
other classes. Training runs without an error and the accuracy stalls; with a batch of one the
output is the constant 0.

## Example
```python
import torch.nn.functional as F
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return F.log_softmax(self.head(x), dim=0)
```

Use instead:
```python
import torch.nn.functional as F
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return F.log_softmax(self.head(x), dim=-1)
```
""",
)
