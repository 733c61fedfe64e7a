"""TD314 input-bound-loader."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD314",
    name="input-bound-loader",
    category=Category.PERFORMANCE,
    severity=Severity.WARNING,
    proof="check",
    message="the DataLoader takes {load} per batch, {ratio:.1f} times one training step ({step}): training will wait for data even with {workers} workers",
    hint="Move expensive work out of __getitem__ (decode or precompute once, cache), use worker processes (num_workers > 0) with pin_memory=True for a GPU, or make the transforms cheaper.",
    variants={
        # check, with num_workers=0
        "no-workers": Variant(message="the DataLoader takes {load} per batch, {ratio:.1f} times one training step ({step}): training will wait for data (num_workers=0: the batches are made in the training process)"),
        # trace measures the wait in the training loop itself
        "traced": Variant(message="each training step waits for the DataLoader {share} of its time ({data} of "
                          "{wall} per traced step), most of it on this line: the model waits for data"),
    },
    doc="""
## What it does
Times the DataLoader for a few batches (after the first, and after the batches its workers had
already prefetched) and compares its fastest batch with the fastest of a few training steps
(forward, backward and optimizer step on the same batch), both timed in the same process on one
thread. It reports a loader more than 1.5 times slower than the step, when a batch also takes
more than 200 times a fixed reference piece of work timed beside it (about 8 ms on an idle
machine: below that, timing noise decides). Every threshold is a ratio of times measured
together, so a busy machine, which slows all of them, gives the same verdict.
`torchdoctor trace` measures the wait in the real training loop: it reports steps that wait for
a DataLoader without workers at least two thirds of their time, at the line of the data
pipeline that takes the most.

## Why is this bad?
The step waits for the next batch: the GPU (or CPU) sits idle for most of the time, and a
faster model, a bigger GPU or mixed precision change nothing. The usual causes are decoding or
augmenting in the main process (`num_workers=0`), Python loops in `__getitem__`, and reading
many small files.

## Example
```python
import time
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

class Slow(Dataset):
    def __len__(self):
        return 128

    def __getitem__(self, i):
        time.sleep(0.003)  # decoding an image, say
        return torch.full((8,), float(i % 7)), i % 3

def make():
    loader = DataLoader(Slow(), batch_size=16)
    return {"model": nn.Linear(8, 3), "data": loader, "loss_fn": nn.CrossEntropyLoss()}
```

Use instead:
```python
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

class Cached(Dataset):
    def __init__(self):
        self.items = [(torch.full((8,), float(i % 7)), i % 3) for i in range(128)]  # decoded once

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]

def make():
    loader = DataLoader(Cached(), batch_size=16)
    return {"model": nn.Linear(8, 3), "data": loader, "loss_fn": nn.CrossEntropyLoss()}
```
""",
)
