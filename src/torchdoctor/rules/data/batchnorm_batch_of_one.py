"""TD423 batchnorm-batch-of-one."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD423",
    name="batchnorm-batch-of-one",
    category=Category.DATA,
    severity=Severity.ERROR,
    proof="run",
    message="{layer} gets a batch of one sample (input {shape}) in training mode: a batch of one sample reached it in training mode",
    hint="Use batches of at least 2 in training (`drop_last=True` drops a last batch of one); for single-sample inference call `model.eval()` first.",
    variants={
        # a DataLoader of the session leaves a last batch of one sample (observe/crash/loss.py)
        "short-last-batch": Variant(
            message="{layer} gets a batch of one sample (input {shape}) in training mode: the last batch of a DataLoader "
            "has one sample ({samples} samples, batch_size={batch_size})",
            hint="Pass `drop_last=True` to the training DataLoader (or pick a batch size that does not leave one sample).",
        ),
    },
    doc="""
## What it does
Explains "Expected more than 1 value per channel when training" from a batch-norm layer,
and finds the DataLoader whose last batch holds a single sample (dataset size modulo batch
size is 1).

## Why is this bad?
Batch norm in training mode normalises with the batch's own statistics, which do not exist
for one sample. It typically crashes at the end of the first epoch, after minutes or hours.

## Example
```python
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(33, 8), torch.randint(0, 2, (33,)))
model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2))
for x, y in DataLoader(data, batch_size=16):
    loss = nn.functional.cross_entropy(model(x), y)
```

Use instead:
```python
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(33, 8), torch.randint(0, 2, (33,)))
model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2))
for x, y in DataLoader(data, batch_size=16, drop_last=True):
    loss = nn.functional.cross_entropy(model(x), y)
```
""",
)
