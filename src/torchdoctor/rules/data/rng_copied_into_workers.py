"""TD140 rng-copied-into-workers."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD140",
    name="rng-copied-into-workers",
    category=Category.DATA,
    severity=Severity.WARNING,
    proof="lint",
    message="{what} created in {dataset}.__init__ is copied into every DataLoader worker: all workers draw the same \"random\" numbers, every epoch",
    hint="Create the generator lazily per worker (e.g. in a `worker_init_fn` using `torch.utils.data.get_worker_info().seed`), or draw from `torch`/`np.random` global state, which PyTorch reseeds per worker.",
    sees={
        "lint": "a NumPy/`random`/torch generator object in `Dataset.__init__`, used in `__getitem__`, loaded with workers",
        "run": "a generator stored on the dataset starts from the same state in several workers, or in every epoch; reported at the `self.rng = ...` line",
    },
    doc="""
## What it does
Flags random number generator objects (`np.random.default_rng(...)`, `np.random.RandomState`,
`random.Random`, `torch.Generator`) stored on a `Dataset` in `__init__` when the dataset is
loaded with worker processes (`num_workers > 0`) and no `worker_init_fn` reseeds them.

## Why is this bad?
Each worker receives a copy of the dataset, generator state included. Since PyTorch 1.9 the
*global* `random`, `torch` and `np.random` states are reseeded per worker, but a generator
object is not: every worker produces the same augmentation "randomness", and it repeats
identically every epoch (unless `persistent_workers=True`). Augmentation is far less varied
than you think, with no error.

## Example
```python
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

class Noisy(Dataset):
    def __init__(self, data):
        self.data = data
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self.data[i] + self.rng.normal()

loader = DataLoader(Noisy(torch.randn(64)), batch_size=8, num_workers=4)
```

Use instead:
```python
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

class Noisy(Dataset):
    def __init__(self, data):
        self.data = data
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self.data[i] + self.rng.normal()

def seed_worker(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)

loader = DataLoader(Noisy(torch.randn(64)), batch_size=8, num_workers=4, worker_init_fn=seed_worker)
```

## References
- [DataLoader: randomness in multi-process data loading](https://pytorch.org/docs/stable/data.html#randomness-in-multi-process-data-loading)
""",
)
