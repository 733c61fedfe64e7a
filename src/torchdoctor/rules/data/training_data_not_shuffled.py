"""TD451 training-data-not-shuffled."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD451",
    name="training-data-not-shuffled",
    category=Category.DATA,
    severity=Severity.WARNING,
    proof="run",
    message="this training DataLoader never shuffles, and its samples come sorted by label (the first {labels} labels go from {low} to {high} without ever going back): each batch holds one class, and the model sees the classes one after another",
    hint="Pass `shuffle=True` to the training DataLoader (or a `RandomSampler` / `DistributedSampler`); a fixed order is fine for validation only.",
    sees={
        "run": "a training DataLoader without shuffling whose labels arrive sorted (long runs of one class, never going back); reported at the `DataLoader(...)` line",
    },
    doc="""
## What it does
At run time, watches the labels of a training DataLoader that keeps the dataset's order
(`shuffle=False` and no sampler) during its first epoch. It flags the loader when the labels
arrive sorted: long runs of one class, each at least a batch long, never returning to an
earlier class. Loaders used only for validation are not flagged, nor are pre-shuffled
datasets read in order.

## Why is this bad?
Datasets are often stored grouped by class (one folder per class, a table sorted by target).
Without shuffling every batch holds a single class, so each step pushes the model towards
"always predict this class", and the next classes undo it: the loss oscillates and the model
ends up biased towards the classes seen last. Nothing fails; accuracy is simply poor.

## Example
```python
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

x = torch.randn(256, 8)
y = torch.arange(256) // 64  # stored sorted by class
loader = DataLoader(TensorDataset(x, y), batch_size=16)
model = nn.Linear(8, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for inputs, labels in loader:
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(inputs), labels).backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

x = torch.randn(256, 8)
y = torch.arange(256) // 64  # stored sorted by class
loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
model = nn.Linear(8, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for inputs, labels in loader:
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(inputs), labels).backward()
    optimizer.step()
```
""",
)
