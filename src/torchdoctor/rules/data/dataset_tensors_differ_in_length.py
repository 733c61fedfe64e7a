"""TD362 dataset-tensors-differ-in-length."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD362",
    name="dataset-tensors-differ-in-length",
    category=Category.DATA,
    severity=Severity.ERROR,
    proof="run",
    message="`TensorDataset` pairs its tensors row by row, but they have different numbers of rows: {lengths}",
    hint="Give every tensor one row per sample: check that inputs and labels are split and filtered the same way (a label tensor of another split, or features transposed to (features, samples), are the usual causes).",
    sees={
        "run": "the crash \"Size mismatch between tensors\" of `TensorDataset(...)`: each tensor's first dimension, named by the argument on the user's line; at that line",
    },
    doc="""
## What it does
Explains the crash "AssertionError: Size mismatch between tensors" of `TensorDataset`: names
each tensor it was given (the arguments on the user's line) with its shape, so that the one
with the other number of rows shows.

## Why is this bad?
`TensorDataset(x, y)` serves sample `i` as `(x[i], y[i])` and requires every tensor to have
the same first dimension; torch 2.13 says only "Size mismatch between tensors". The cause is
upstream: labels of another split, a filter applied to the features only, or a matrix stored
as (features, samples).

## Example
```python
import torch
from torch.utils.data import TensorDataset

features = torch.randn(100, 8)
labels = torch.randint(0, 2, (120,))
dataset = TensorDataset(features, labels)
```

Use instead:
```python
import torch
from torch.utils.data import TensorDataset

features = torch.randn(100, 8)
labels = torch.randint(0, 2, (100,))
dataset = TensorDataset(features, labels)
```
""",
)
