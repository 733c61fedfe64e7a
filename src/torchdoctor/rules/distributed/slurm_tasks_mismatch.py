"""TD715 slurm-tasks-mismatch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD715",
    name="slurm-tasks-mismatch",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message="the launch variables disagree with the srun step: {problems}",
    hint="Take the launch variables from SLURM's, in the script or before it: RANK=$SLURM_PROCID, WORLD_SIZE=$SLURM_NTASKS, LOCAL_RANK=$SLURM_LOCALID; or start one torchrun per node (`srun --ntasks-per-node=1 torchrun ...`).",
    variants={
        # srun started several tasks on a node, each its own torchrun
        "torchrun-per-task": Variant(hint="Start one torchrun per node: `srun --ntasks-per-node=1 torchrun --nnodes=$SLURM_NNODES --nproc-per-node=<GPUs per node> ...`."),
    },
    doc="""
## What it does
In an srun step, compares what torch.distributed is told with what SLURM started: `WORLD_SIZE`
with the step's tasks (`SLURM_STEP_NUM_TASKS`), `RANK` and `LOCAL_RANK` with `SLURM_PROCID` and
`SLURM_LOCALID`, `LOCAL_WORLD_SIZE` with the tasks on this node; and under torchrun, how many
tasks srun started on the node, each of which runs its own torchrun.

## Why is this bad?
`--ntasks-per-node=8` with a script that expects one process per GPU, but launched through
`torchrun --nproc-per-node=8`, starts 8 torchruns of 8 ranks on each node: 64 processes fight for
8 GPUs and the rendezvous never completes. A `WORLD_SIZE` computed by hand (`$((SLURM_NNODES *
8))`) for a step that runs 4 tasks per node makes rank 0 wait for ranks that do not exist.

## Example
```json
{"mode": "launcher",
 "launch": {"RANK": "3", "WORLD_SIZE": "16", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "8", "MASTER_ADDR": "gpu01",
            "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "42", "SLURM_PROCID": "0", "SLURM_LOCALID": "0",
            "SLURM_NODEID": "0", "SLURM_STEP_NUM_TASKS": "16", "SLURM_STEP_TASKS_PER_NODE": "8(x2)"}}
```

Use instead:
```json
{"mode": "launcher",
 "launch": {"RANK": "3", "WORLD_SIZE": "16", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "8", "MASTER_ADDR": "gpu01",
            "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "42", "SLURM_PROCID": "0", "SLURM_LOCALID": "0",
            "SLURM_NODEID": "0", "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_TASKS_PER_NODE": "1(x2)"}}
```
""",
)
