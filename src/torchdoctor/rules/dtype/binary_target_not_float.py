"""TD429 binary-target-not-float."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD429",
    name="binary-target-not-float",
    category=Category.DTYPE,
    severity=Severity.ERROR,
    proof="run",
    message="{loss} gets targets of dtype {dtype}; its targets are probabilities and must be floating point (the input's dtype)",
    hint="Convert the labels with `y.float()` (shape like the input, e.g. `y.float().unsqueeze(1)` for an (N, 1) output).",
    doc="""
## What it does
Explains the crashes "result type Float can't be cast to the desired output type Long"
(`BCEWithLogitsLoss`) and "Found dtype Long but expected Float" (`BCELoss`): integer 0/1
labels given to a binary cross-entropy.

## Why is this bad?
Unlike `CrossEntropyLoss`, whose targets are class indices (int64), the binary losses take a
target of the same shape and dtype as the input: a probability per element. Labels read as
integers (`torch.randint`, a NumPy int array, `torch.tensor([0, 1])`) stop the first step
with an error that names dtypes but neither the loss nor the labels. Verified on torch 2.13.

## Example
```python
import torch
from torch import nn

scores = torch.randn(8, 1, requires_grad=True)
labels = torch.randint(0, 2, (8, 1))
loss = nn.BCEWithLogitsLoss()(scores, labels)
```

Use instead:
```python
import torch
from torch import nn

scores = torch.randn(8, 1, requires_grad=True)
labels = torch.randint(0, 2, (8, 1))
loss = nn.BCEWithLogitsLoss()(scores, labels.float())
```
""",
)
