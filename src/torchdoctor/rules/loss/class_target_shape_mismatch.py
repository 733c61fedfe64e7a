"""TD418 class-target-shape-mismatch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD418",
    name="class-target-shape-mismatch",
    category=Category.LOSS,
    severity=Severity.ERROR,
    proof="run",
    message="{loss} cannot pair input and target: {detail}",
    hint="CrossEntropyLoss and NLLLoss take logits of shape (N, C, ...) with the classes in dim 1, and class indices of shape (N, ...).",
    doc="""
## What it does
Explains the crashes "Expected target size [32, 50], got [32, 100]", "Expected input
batch_size (32) to match target batch_size (16)" and "Expected floating point type for target
with class probabilities, got Long" from `CrossEntropyLoss` / `NLLLoss`: sequence logits
with the classes in the last dimension, a reshape that mixes samples in the model, one-hot
integer targets.

## Why is this bad?
The loss reads the classes from dimension 1. Sequence models produce (batch, positions,
classes), which must be transposed or flattened first; a `view(-1, features)` with the wrong
feature count silently changes the batch size.

## Example
```python
import torch
from torch import nn

logits = torch.randn(8, 20, 100)  # (batch, positions, vocabulary)
targets = torch.randint(0, 100, (8, 20))
loss = nn.CrossEntropyLoss()(logits, targets)
```

Use instead:
```python
import torch
from torch import nn

logits = torch.randn(8, 20, 100)
targets = torch.randint(0, 100, (8, 20))
loss = nn.CrossEntropyLoss()(logits.transpose(1, 2), targets)
```
""",
)
