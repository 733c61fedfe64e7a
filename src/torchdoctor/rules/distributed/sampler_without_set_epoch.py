"""TD141 sampler-without-set-epoch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD141",
    name="sampler-without-set-epoch",
    category=Category.DISTRIBUTED,
    severity=Severity.WARNING,
    proof="lint",
    message="DistributedSampler {sampler} is iterated every epoch but `set_epoch()` is never called: every epoch sees the same order",
    hint="Call `sampler.set_epoch(epoch)` at the start of every epoch, before iterating the DataLoader.",
    variants={
        # set_epoch() called, but with the same value every epoch (run)
        "same-epoch": Variant(message="DistributedSampler {sampler} is iterated again with the same epoch: `set_epoch()` gets the same value every time, so every epoch sees the same order"),
    },
    sees={
        "lint": "a shuffling `DistributedSampler` iterated every epoch, `set_epoch()` never called",
        "run": "a shuffling `DistributedSampler` of a training loader starts a second training epoch with the same epoch; reported at the `for batch in loader` line",
    },
    doc="""
## What it does
Flags a `DistributedSampler` used in an epoch loop with no call to its `set_epoch()`.

## Why is this bad?
`DistributedSampler` seeds its shuffle with `seed + epoch`. Without `set_epoch`, the epoch
stays 0 and every epoch yields exactly the same order on every rank: shuffling is in effect
off, which costs accuracy without any message.

## Example
```python
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

def fit(model, dataset, step, epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        for batch in loader:
            step(model, batch)
```

Use instead:
```python
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

def fit(model, dataset, step, epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            step(model, batch)
```

## References
- [`DistributedSampler`](https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler): "calling the set_epoch() method at the beginning of each epoch before creating the DataLoader iterator is necessary to make shuffling work properly across multiple epochs."
""",
)
