"""TD452 host-sync-every-step."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD452",
    name="host-sync-every-step",
    category=Category.PERFORMANCE,
    severity=Severity.INFO,
    proof="run",
    message="{call} waits for the GPU on every training step ({count}x per step): the CPU stops queueing work until the GPU has finished everything before it",
    hint="Keep values on the GPU and read them every N steps (e.g. accumulate `loss.detach()` and call `.item()` when you log), and avoid using tensors in `if` conditions or `print` inside the step.",
    variants={
        # trace counts the waits per line and per traced step, and names the ops that waited
        "traced": Variant(message="this line makes the CPU wait for the GPU {count}x on every traced step{ops}: "
                          "the CPU stops queueing work until the GPU has finished everything before it"),
    },
    sees={
        "run": "on a GPU run, a line that copies a device value to the host in every traced step (a warning from 3 per step); reported at the `.item()` / `.cpu()` line",
    },
    doc="""
## What it does
On a GPU run, traces a few training steps after the warm-up and flags the lines that copy a
GPU value to the host in every one of them: `.item()`, `.cpu()`, `.tolist()`, `.numpy()`,
`print(tensor)`, a tensor used in an `if`. Lines that run only every N steps (logging) are not
flagged. It is info when a step synchronises once or twice, and a warning from three times
per step. On CPU-only runs there is nothing to synchronise with, and it stays silent.
`torchdoctor trace` also counts, per line and per traced step, where the CUDA runtime made the
host wait (including syncs inside torch: `nonzero`, boolean-mask indexing, a copy to the CPU),
and reports the lines that wait in every traced step.

## Why is this bad?
CUDA runs asynchronously: Python queues kernels and moves on, so the next step's work is
queued while the GPU computes. Reading a value back forces the CPU to wait until the GPU has
finished everything queued before it, and then the GPU waits for the CPU to queue the next
work. One `loss.item()` per step is cheap on large models but costs 5-50% on small and
medium ones; several per step (metrics, a tensor `if`) cost more.

## Example
```python
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(8, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
running = 0.0
for step in range(30):
    x = torch.randn(16, 8, device=device)
    optimizer.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    running += loss.item()  # waits for the GPU every step
```

Use instead:
```python
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(8, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
running = torch.zeros((), device=device)
for step in range(30):
    x = torch.randn(16, 8, device=device)
    optimizer.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    running += loss.detach()
    if step % 100 == 99:
        print(running.item() / 100)
        running.zero_()
```
""",
)
