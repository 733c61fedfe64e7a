"""TD420 dataloader-worker-killed."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD420",
    name="dataloader-worker-killed",
    category=Category.DATA,
    severity=Severity.ERROR,
    proof="run",
    message="a DataLoader worker (pid {pid}) was killed by {signal} (a crash in native code run by the worker: an image decoder, a compiled extension)",
    hint="Run the loader with `num_workers=0` to see the error in the main process, and check the libraries the dataset calls.",
    variants={
        "bus-error": Variant(
            message="a DataLoader worker (pid {pid}) was killed by a Bus error: the workers ran out of shared memory "
            "(/dev/shm{shm}), which carries every batch to the main process",
            hint="Give the container more shared memory (`docker run --shm-size=8g ...` or `--ipc=host`; Kubernetes: an "
            "emptyDir with medium Memory on /dev/shm), or use fewer workers / smaller batches.",
        ),
        "out-of-memory": Variant(
            message="a DataLoader worker (pid {pid}) was killed by SIGKILL, usually the kernel's out-of-memory killer: "
            "every worker holds a copy of what the dataset keeps in memory",
            hint="Use fewer workers, keep large arrays out of the Dataset object (memory-map them, or load per item), and "
            "check the job's memory limit.",
        ),
    },
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
