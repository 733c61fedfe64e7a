"""TD462 collective-timed-out."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

#: how the collective failed (observe/crash/distributed.py), after "`{op}` failed ": the process group's
#: timeout of {seconds} ran out, or another rank closed its connection; TD461 says the same of the failed
#: collectives it explains
HOW = {
    "timed-out": "after waiting {seconds:g} s for the other ranks (the process group's timeout)",
    "peer-gone": "because another rank closed its connection (it exited or crashed) while this one waited in it",
}
_WHO = {"": "rank {rank}", "-on-host": "rank {rank} on {host}"}
_LAST = {"": "its last collective was {last}", "-no-call": "it had called no collective"}
_NEVER = {
    "finished": ("finished without joining it (", ")"),
    # another node tells whether the process of its rank lived: it ended without saying it finished
    "killed": ("never joined it: its process had ended without its exit handlers (killed, or died in native code; ", ")"),
    "absent": ("never joined it (", ")"),
}
#: where each other rank was when it failed (run/ranks.py), the clauses of {others}: waiting in another
#: collective ({call}), or never joining it, by why, with its last collective ({last}) or none ("-no-call");
#: a rank of a job on several hosts is named with its host ("-on-host")
WHERE = {
    **{"waiting" + on: "; " + who + " was waiting in {call}" for on, who in _WHO.items()},
    **{never + none + on: "; " + who + " " + before + last + after
       for never, (before, after) in _NEVER.items() for none, last in _LAST.items() for on, who in _WHO.items()},
}

RULE = Rule(
    code="TD462",
    name="collective-timed-out",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="run",
    message="`{op}` failed " + HOW["timed-out"] + "{others}",
    hint="Find what the other ranks were doing: a rank that crashed, is stuck, or does much longer work alone (evaluation, saving) before the collective; raise the process group's `timeout=` if that work is legitimate.",
    variants={
        # another rank closed its connection while this one waited
        "peer-gone": Variant(message="`{op}` failed " + HOW["peer-gone"] + "{others}"),
    },
    doc="""
## What it does
Explains a collective that failed because the other ranks did not join it: gloo's "Timed out
waiting ... for recv operation to complete" after the process group's timeout, or "Connection
closed by peer" when another rank exited or crashed while this one waited. It points at the
line of your code that called the collective and, under `torchdoctor run`, says where every
other rank was: its last collective and its line, or that it had exited. When the ranks simply
called different collectives, the finding is TD461 (collectives-out-of-order) instead.

## Why is this bad?
The exception names neither the collective nor the missing rank. A timeout set short (to fail
fast) turns any long single-rank work before a collective (rank 0 evaluating or writing a
checkpoint while the others wait in `barrier()`) into a crash.

## Example
```python
# torchrun --nproc-per-node 2
import datetime
import time

import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=4))
if dist.get_rank() == 0:
    time.sleep(6)  # rank 0 alone: evaluation, a checkpoint...
dist.barrier()
dist.destroy_process_group()
```

Use instead:
```python
# torchrun --nproc-per-node 2
import datetime
import time

import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(minutes=10))
if dist.get_rank() == 0:
    time.sleep(6)  # rank 0 alone: evaluation, a checkpoint...
dist.barrier()
dist.destroy_process_group()
```
""",
)
