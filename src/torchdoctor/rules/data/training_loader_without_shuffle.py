"""TD143 training-loader-without-shuffle."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD143",
    name="training-loader-without-shuffle",
    category=Category.DATA,
    severity=Severity.WARNING,
    proof="lint",
    message="the DataLoader that the training loop at line {loop} draws from never shuffles ({how}): every epoch gives the samples in the order {dataset} stores them, the same batches in the same order",
    hint="Pass `shuffle=True` to the training DataLoader (or a `RandomSampler` / `DistributedSampler`); keep the fixed order for evaluation loaders.",
    sees={
        "lint": "a DataLoader (not over held-out data) that a loop stepping an optimizer draws from (through names, attributes, parameters and returns) with `shuffle=False`, or no `shuffle` over a torchvision or file-defined map-style dataset, and no sampler (data the file permutes, splits or sorts by length itself, datasets that sample at random or stream, `batch_size=None`, and loops that carry a recurrent state are fine)",
    },
    doc="""
## What it does
Flags a `torch.utils.data.DataLoader` that a training loop (one that steps an optimizer)
iterates, when the loader keeps the dataset's order: `shuffle=False`, or no
`shuffle` at all over a map-style dataset (a torchvision dataset or a `Dataset` subclass of the
file), and no `sampler` or `batch_sampler`. The finding points at `shuffle=False`, or at the
DataLoader call when the argument is missing.

Left alone, because the fixed order is then deliberate or harmless: a loader whose data the
file puts in random order itself (`torch.randperm`, `random.shuffle`, `np.random.permutation`,
`random_split`, `train_test_split`, `.shuffle()`), data sorted on purpose by length
(`sorted(..., key=len)`), a dataset whose `__getitem__` draws its samples at random, an
`IterableDataset` (which cannot be shuffled by the loader), held-out data (a dataset built
with `train=False`, a loader named `val_loader` or `test_loader`), `batch_size=None` (the dataset
makes the batches), and a loop that carries a recurrent state from one batch to the next
(`output, hidden = model(x, hidden)`: truncated backpropagation needs the order).

## Why is this bad?
Datasets are stored in an order that means something: grouped by class (one folder per class),
by source, by date. Without shuffling, each batch is a slice of that order instead of a random
sample, so the gradient of a step is biased towards whatever the slice holds; and every epoch
repeats the very same batches, so the model can fit the sequence. Training still runs; the
accuracy is lower, sometimes far lower, and nothing says why. The usual cause is a training
loader written by copying the validation loader, `shuffle=False` included.

## Example
```python
import torch
from torch import nn
from torchvision import datasets, transforms

train_set = datasets.MNIST("data", train=True, download=True, transform=transforms.ToTensor())
train_loader = torch.utils.data.DataLoader(train_set, batch_size=64, shuffle=False)
model = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(10):
    for images, labels in train_loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()
```

Use instead:
```python
import torch
from torch import nn
from torchvision import datasets, transforms

train_set = datasets.MNIST("data", train=True, download=True, transform=transforms.ToTensor())
train_loader = torch.utils.data.DataLoader(train_set, batch_size=64, shuffle=True)
model = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(10):
    for images, labels in train_loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()
```
""",
)
