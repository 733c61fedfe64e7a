"""TD166 checkpoint-load-without-map-location."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD166",
    name="checkpoint-load-without-map-location",
    category=Category.DISTRIBUTED,
    severity=Severity.WARNING,
    proof="lint",
    message="`torch.load` without `map_location` in distributed code: every rank puts the checkpoint's tensors on the device they were saved from (usually cuda:0)",
    hint="Load onto the CPU (`map_location=\"cpu\"`) or onto this rank's device (`map_location=f\"cuda:{{local_rank}}\"`).",
    sees={
        "lint": "`torch.load(path)` without `map_location` in a file that sets up distributed training (every rank loads onto cuda:0); not for a GradScaler's state, a load of what the same function saved, or a `test_*` function",
    },
    doc="""
## What it does
Flags `torch.load(...)` without `map_location` in a file that sets up distributed training
(`init_process_group` or `DistributedDataParallel`). Left alone: a function that passes
`map_location` to another `torch.load` (it places loads on purpose), a checkpoint that only a
GradScaler reads (its state is floats and ints: nothing to place), a load of what the same
function saved with `torch.save` before (one process reading back its own tensors), and a
`test_*` function (pytest runs it in a single process).

## Why is this bad?
Tensors remember the device they were saved from. A checkpoint written by rank 0 from `cuda:0`
is loaded by every rank onto `cuda:0`: GPU 0 gets one extra copy per process, runs out of memory
on resume, or the ranks silently share one GPU's memory. On a machine without that GPU it fails
with "Attempting to deserialize object on a CUDA device".

## Example
```python
import torch
import torch.distributed as dist

def resume(model, path):
    dist.init_process_group("nccl")
    model.load_state_dict(torch.load(path, weights_only=True))
```

Use instead:
```python
import torch
import torch.distributed as dist

def resume(model, path):
    dist.init_process_group("nccl")
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
```
""",
)
