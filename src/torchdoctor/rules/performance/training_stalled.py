"""TD497 training-stalled."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

#: the runner's words for the rank behind, appended to its message (run/stalled_ranks.py): by how many
#: ranks wait for it ("rank", "ranks") and where ("": at {line}; "-elsewhere": there and at other lines;
#: "-unplaced": no line known)
HOLDS_BACK = {
    f"{ranks}{where}": "; this rank is behind: {ranks} " + wait + " for it in {collective} at " + at
    for ranks, wait in (("rank", "waits"), ("ranks", "wait"))
    for where, at in (("", "{line}"), ("-elsewhere", "{line} and elsewhere"), ("-unplaced", "their line"),
                      ("-unplaced-elsewhere", "their line and elsewhere"))
}

RULE = Rule(
    code="TD497",
    name="training-stalled",
    category=Category.PERFORMANCE,
    severity=Severity.WARNING,
    proof="run",
    message="no optimizer step for {waited:.3g} s after step {step} (a step takes {median} at the median): {where}{behind}",
    hint="{remedy}",
    doc="""
## What it does
A watchdog thread in the observed process (it costs nothing per step: the steps and batches
only note the time) notices when no optimizer step and no batch has come for many times the
median step time (50x) and at least `--stall-timeout` seconds (60 by default, or the
environment's `TORCHDOCTOR_STALL_TIMEOUT`, which `torchdoctor.watch()` reads too; 0 turns the
watchdog off). It then writes, once and without stopping the job, where every thread of the
process waits (`sys._current_frames()`): the user's line the main thread is at, and what it
waits on (a DataLoader fetch, a collective, a lock, I/O). When the main thread waits for a
DataLoader worker, it names the worker, the samples it was given, and the line of the dataset
code the worker is at (read from the worker process's own stack dump). In a job of several
ranks (`torchdoctor run` of a launcher such as torchrun), the ranks that wait in a collective
(one of `torch.distributed`'s, or DistributedDataParallel's gradient all-reduce in
`backward()`) wait for the rank behind: the runner reports the stall once, at the line of the
rank behind, and names the ranks it holds back and where they wait.
A busy machine does not make a stall: the watchdog decides only on two consecutive checks
that it made on time, and a process compiling (`torch.compile`) is not waiting.

## Why is this bad?
A job that hangs shows nothing: no error, no log line, a GPU at 0%. A dataset read from a
network file system, a lock taken twice, a worker stuck on a corrupt file or a rank that never
reaches a collective all look the same from the outside; where the threads wait tells them
apart.

## Example
```python
import time  # torchdoctor run --stall-timeout 2 example.py

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset



class Remote(Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, i):
        if i == 200:
            time.sleep(6)  # a read that hangs
        return torch.randn(8), torch.randn(1)


if __name__ == "__main__":
    loader = DataLoader(Remote(), batch_size=8, num_workers=1)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
```

Use instead:
```python
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Remote(Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, i):
        return torch.randn(8), torch.randn(1)


if __name__ == "__main__":
    loader = DataLoader(Remote(), batch_size=8, num_workers=1)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
```
""",
)
