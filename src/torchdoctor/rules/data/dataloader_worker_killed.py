"""TD420 dataloader-worker-killed."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD420",
    name="dataloader-worker-killed",
    category=Category.DATA,
    severity=Severity.ERROR,
    proof="run",
    message="a DataLoader worker (pid {pid}) was killed by {cause}",
    hint="Give the workers more shared memory or RAM (`docker run --shm-size=8g` or `--ipc=host`), or use fewer workers.",
    doc="""
## What it does
Explains "DataLoader worker (pid N) is killed by signal: Bus error" (and "exited
unexpectedly") by the signal: a Bus error means the shared memory in `/dev/shm`, which
carries batches from the workers, ran out (it reports its size); SIGKILL means the
out-of-memory killer.

## Why is this bad?
Docker gives containers 64 MB of shared memory by default, far less than a few batches of
images; the worker dies with a signal and no Python traceback.

## Example
The example simulates what a full `/dev/shm` does to a worker; the fix is outside the code
(`docker run --shm-size=8g`), after which the same loader runs:
```python
import os
import signal
import torch
from torch.utils.data import DataLoader, Dataset

class Images(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            os.kill(os.getpid(), signal.SIGBUS)
        return torch.zeros(3, 32, 32)

if __name__ == "__main__":
    for batch in DataLoader(Images(), batch_size=2, num_workers=2):
        pass
```

Use instead:
```python
import torch
from torch.utils.data import DataLoader, Dataset

class Images(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.zeros(3, 32, 32)

if __name__ == "__main__":
    for batch in DataLoader(Images(), batch_size=2, num_workers=2):
        pass
```
""",
)
