"""TD442 loader-host-memory."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD442",
    name="loader-host-memory",
    category=Category.DATA,
    severity=Severity.WARNING,
    proof="run",
    # the batches in flight (observe/detectors/loader_memory.py)
    message="the DataLoader's workers take {size} of host memory: {workers} workers x prefetch_factor {prefetch} = {count} "
    "batches of {batch} in flight, {shared} in shared memory (/dev/shm holds {shm}), with {free} of the machine's memory "
    "available",
    hint="Lower `prefetch_factor` (2 by default) or `num_workers`, or the batch size; in a container, give /dev/shm more "
    "room (`docker run --shm-size=...`).",
    variants={
        # the batches in flight, pinned again with pin_memory=True
        "pinned": Variant(
            message="the DataLoader's workers take {size} of host memory: {workers} workers x prefetch_factor {prefetch} = "
            "{count} batches of {batch} in flight, {shared} in shared memory (/dev/shm holds {shm}) and {pinned} more in "
            "page-locked memory (`pin_memory=True`), with {free} of the machine's memory available",
        ),
        # the workers' private memory grows as they read a Dataset of Python objects
        "copy-on-access": Variant(
            message="the DataLoader's workers take {size} of host memory: {grown} of its {workers} workers grew from {first} "
            "to {now} of private memory while reading the Dataset, whose `{name}` holds {items:,} Python objects (about "
            "{estimate}): reading an object writes its reference count, which copies its page into every forked worker "
            "(copy on access), so each worker ends up with its own copy",
            hint="Keep `{name}` as a NumPy array or a tensor (one object, no reference count per record): strings as one "
            "array of bytes with offsets, numbers as an array of their dtype.",
        ),
    },
    sees={
        "run": "DataLoader workers' host memory with the numbers: `prefetch_factor` x `num_workers` batches in flight against the free memory and /dev/shm (and as much again pinned with `pin_memory=True`), and Dataset records kept as Python objects that are copied into every forked worker as they are read (copy on access); reported at the `DataLoader(...)` line",
    },
    doc="""
## What it does
Measures the host memory a DataLoader with worker processes uses, with the numbers that make
it: the batches in flight (`prefetch_factor` x `num_workers` batches of the measured size, in
shared memory, and as many again in page-locked memory with `pin_memory=True`), against the
machine's free memory and the size of /dev/shm; and the private memory each forked worker
gains while it reads the Dataset. A Dataset that keeps its records as Python objects (a list of
dicts, of strings, of floats) is copied page by page into every worker as the workers touch the
objects' reference counts ("copy on access"): the well-known "DataLoader memory grows with
num_workers" problem.

## Why is this bad?
Each worker ends up with its own copy of the Dataset, so memory grows with the number of
workers and over the first epoch until the machine swaps or the out-of-memory killer stops the
job; batches in flight beyond the size of /dev/shm kill the workers with a bus error.

## Example
```python
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Rows(Dataset):
    def __init__(self):
        self.values = [float(i % 97) for i in range(4_000_000)]  # Python floats

    def __len__(self):
        return 2000

    def __getitem__(self, index):
        row = self.values[index * 2000:(index + 1) * 2000]
        return torch.tensor(row[:16]), torch.tensor(sum(row) % 4, dtype=torch.long)


if __name__ == "__main__":
    model = nn.Linear(16, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(2):
        for x, y in DataLoader(Rows(), batch_size=50, num_workers=2):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
```

Use instead:
```python
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Rows(Dataset):
    def __init__(self):
        self.values = np.array([float(i % 97) for i in range(4_000_000)])  # one array

    def __len__(self):
        return 2000

    def __getitem__(self, index):
        row = self.values[index * 2000:(index + 1) * 2000]
        return torch.tensor(row[:16]).float(), torch.tensor(int(row.sum()) % 4, dtype=torch.long)


if __name__ == "__main__":
    model = nn.Linear(16, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(2):
        for x, y in DataLoader(Rows(), batch_size=50, num_workers=2):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
```
""",
)
