"""TD165 collective-under-rank-condition."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD165",
    name="collective-under-rank-condition",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="lint",
    message="`{collective}` runs only on the ranks where `{condition}` holds: the others never join it, and the job hangs until the collective times out",
    hint="Call the collective on every rank (move it out of the `if`), and keep only the rank-0 work (saving, logging) inside it.",
    sees={
        "lint": "`dist.barrier()`/`all_reduce` inside `if rank == 0:` (a hang); the `rank != 0` / `rank == 0` barrier hand-shake, and a condition on a value a collective made equal on every rank, are fine",
    },
    doc="""
## What it does
Flags a `torch.distributed` collective (`barrier`, `all_reduce`, `all_gather`, `broadcast`,
`reduce`, `gather`, `scatter`, their `*_object` forms, ...) inside an `if` that depends on
the rank (`if rank == 0:`, `if dist.get_rank() != 0:`, `if local_rank in [-1, 0]:`,
`if is_main_process():`) when the other branch calls no collective.

## Why is this bad?
A collective completes only when every rank of the group calls it. If rank 0 alone enters a
`barrier()` or an `all_reduce()` (typically next to saving a checkpoint or computing a
metric), it waits forever for the others: the job hangs with no error until the NCCL watchdog
kills it after its timeout (10 minutes by default), far from the line that caused it. (The
deliberate hand-shake `if rank != 0: barrier()` ... `if rank == 0: barrier()`, where each
rank calls the barrier once, is not flagged, nor is `if local_rank != -1:`, which tests whether
the job is distributed at all and is true on every rank or on none, nor a condition on a value
that a collective made the same on every rank, such as a count of ranks summed by
`all_reduce` a few lines up.)

## Example
```python
import torch
import torch.distributed as dist

def save(model, path):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), path)
        dist.barrier()
```

Use instead:
```python
import torch
import torch.distributed as dist

def save(model, path):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), path)
    dist.barrier()
```
""",
)
