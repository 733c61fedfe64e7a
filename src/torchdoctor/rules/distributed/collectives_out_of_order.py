"""TD461 collectives-out-of-order."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule
from torchdoctor.rules.distributed.collective_timed_out import HOW

#: what became of the failed collectives (TD462) this finding explains (run/ranks.py), added to {outcome}:
#: by how they failed (TD462's HOW, or "failed": not known); {failed} names each (FAILED_ON), joined by " and "
OUTCOMES = {**{kind: "; then {failed} failed " + how for kind, how in HOW.items()}, "failed": "; then {failed} failed"}
FAILED_ON = "`{op}` on rank {rank}"

RULE = Rule(
    code="TD461",
    name="collectives-out-of-order",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="run",
    message="the ranks call collectives in a different order: {difference}{outcome}",
    hint="Call every collective on every rank of its group, in the same order: keep rank-0-only work (saving, logging, evaluation) free of collectives, or call the collective outside the `if`.",
    doc="""
## What it does
At run time (`torchdoctor run`, several ranks), records on each rank the sequence of
`torch.distributed` collectives it calls (`all_reduce`, `broadcast`, `barrier`, `all_gather`,
their `*_object` forms, ... and the construction of `DistributedDataParallel`, which
broadcasts): the operation, the tensor's shape and dtype, the group, and the line of your code
that called it. Appending to a list is all it costs, and no message is sent between ranks. The
runner compares the ranks' sequences when the job ends, or as soon as every rank is stuck
waiting in a collective that the others will never call, and reports the first place they
differ with the lines of both ranks. A job stuck that way is stopped after about 10 seconds
instead of hanging until its timeout (30 minutes by default for gloo).

## Why is this bad?
A collective completes only when every rank of the group calls it, and calls are matched by
their order, not by their line. An `all_reduce` under `if rank == 0:` either hangs the job (the
other ranks wait in a different collective) or, worse, is paired with the next `all_reduce` of
the other ranks, which then average the wrong tensors (seen on torch 2.13 with gloo: the ranks
went on with mixed-up values until one exited and the other failed with "Connection closed by
peer").

## Example
```python
# torchrun --nproc-per-node 2
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
total = torch.ones(4)
if dist.get_rank() == 0:
    dist.all_reduce(total)
dist.barrier()
dist.destroy_process_group()
```

Use instead:
```python
# torchrun --nproc-per-node 2
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
total = torch.ones(4)
dist.all_reduce(total)
if dist.get_rank() == 0:
    print(total)
dist.barrier()
dist.destroy_process_group()
```
""",
)
