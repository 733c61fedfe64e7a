"""TD142 unpicklable-worker-function."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD142",
    name="unpicklable-worker-function",
    category=Category.DATA,
    severity=Severity.WARNING,
    proof="lint",
    message="{argument}={what} cannot be pickled, so this DataLoader fails with worker processes under the spawn/forkserver start method (Windows, macOS, Python 3.14+ on Linux)",
    hint="Define the function at module level (a named `def`), or use `functools.partial` of a module-level function.",
    variants={
        # check: the dataset itself does not pickle, for the attribute named
        "dataset": Variant(message="dataset={dataset} cannot be pickled ({attribute} is {what}), so this DataLoader fails with worker processes under the spawn/forkserver start method (Windows, macOS, Python 3.14+ on Linux)"),
    },
    sees={
        "lint": "a lambda or nested function as `collate_fn`/`worker_init_fn` with workers",
        "run": "a lambda or nested function as `collate_fn` / `worker_init_fn` with workers (breaks under spawn/forkserver)",
    },
    doc="""
## What it does
Flags a lambda or a function defined inside another function passed as `collate_fn` or
`worker_init_fn` to a `DataLoader` with `num_workers > 0`.

## Why is this bad?
Worker processes started with `spawn` or `forkserver` receive the dataset and these
functions by pickling, and lambdas and nested functions cannot be pickled: the loader dies
with "Can't pickle <function <lambda> ...>". Windows and macOS use `spawn`, and Python 3.14
makes `forkserver` the default on Linux, so code that works today on Linux with `fork`
breaks elsewhere.

## Example
```python
import torch
from torch.utils.data import DataLoader

def make_loader(dataset):
    return DataLoader(dataset, batch_size=8, num_workers=2,
                      collate_fn=lambda batch: torch.stack(batch))
```

Use instead:
```python
import torch
from torch.utils.data import DataLoader

def stack(batch):
    return torch.stack(batch)

def make_loader(dataset):
    return DataLoader(dataset, batch_size=8, num_workers=2, collate_fn=stack)
```
""",
)
