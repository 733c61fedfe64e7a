"""TD313 shared-memory-too-small."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD313",
    name="shared-memory-too-small",
    category=Category.DATA,
    severity=Severity.WARNING,
    proof="check",
    message="{workers} workers x prefetch {prefetch} x {batch} per batch need about {need} of shared memory, but /dev/shm has {free} free",
    hint="Give the container more shared memory (`docker run --shm-size=8g` or `--ipc=host`), or lower num_workers / prefetch_factor, or send smaller batches (uint8 images, converted to float on the device).",
    doc="""
## What it does
For a DataLoader with worker processes, estimates the shared memory its prefetched batches
occupy (`num_workers x prefetch_factor x` the size of one batch) and compares it with the free
space in `/dev/shm` (Linux).

## Why is this bad?
Workers hand batches to the training process through shared memory. Docker gives a container
64 MB of `/dev/shm` by default; when it fills up, a worker dies with "DataLoader worker (pid
...) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared
memory", often hours into training, or the loader hangs.
(The check's documentation examples run on a simulated machine with a 64 MB `/dev/shm`,
Docker's default.)

## Example
```python
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 10)

    def forward(self, images):
        return self.fc(images.float().mean(dim=(2, 3)))

def make():
    images = torch.rand(32, 3, 224, 224)  # float32: 9.6 MB per batch of 16
    data = TensorDataset(images, torch.arange(32) % 10)
    loader = DataLoader(data, batch_size=16, num_workers=4)
    return {"model": Net(), "data": loader, "loss_fn": nn.CrossEntropyLoss()}
```

Use instead:
```python
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 10)

    def forward(self, images):
        return self.fc(images.float().mean(dim=(2, 3)) / 255)

def make():
    images = torch.randint(0, 256, (32, 3, 224, 224), dtype=torch.uint8)  # 2.4 MB per batch
    data = TensorDataset(images, torch.arange(32) % 10)
    loader = DataLoader(data, batch_size=16, num_workers=4)
    return {"model": Net(), "data": loader, "loss_fn": nn.CrossEntropyLoss()}
```
""",
)
