"""TD613 small-shared-memory."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD613",
    name="small-shared-memory",
    category=Category.ENV,
    severity=Severity.WARNING,
    proof="env",
    message='/dev/shm is only {size}: DataLoader workers and NCCL pass data through it',
    hint='Give the container more shared memory (`docker run --shm-size=16g` or `--ipc=host`; in Kubernetes mount an `emptyDir` with `medium: Memory` at /dev/shm), or use num_workers=0.',
    doc="""
## What it does
Measures the size of `/dev/shm`, and flags it below 1 GiB.

## Why is this bad?
DataLoader workers hand every batch to the main process through shared memory, and NCCL uses it
between local ranks. Docker's default is 64 MiB: workers die with "Unexpected bus error
encountered in worker. This might be caused by insufficient shared memory (shm)", and NCCL
with "unhandled system error" ("Error while creating shared memory segment").

## Example
```json
{"limits": {"shm_bytes": 67108864}}
```

Use instead:
```json
{"limits": {"shm_bytes": 17179869184}}
```
""",
)
