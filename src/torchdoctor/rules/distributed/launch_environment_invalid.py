"""TD700 launch-environment-invalid."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD700",
    name="launch-environment-invalid",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message='the launch variables cannot work: {problems}',
    hint='Start the job with a launcher that sets them (`torchrun --nproc-per-node N train.py`), or set RANK (0..WORLD_SIZE-1), WORLD_SIZE, MASTER_ADDR and MASTER_PORT identically on every rank except RANK.',
    doc="""
## What it does
Checks the variables `init_process_group(init_method="env://")` reads (`RANK`, `WORLD_SIZE`,
`MASTER_ADDR`, `MASTER_PORT`) and those launchers add (`LOCAL_RANK`, `LOCAL_WORLD_SIZE`) before any
process joins: all present, integers where they must be, ranks in range, a real port, an
address that resolves.

## Why is this bad?
torch only finds out when a rank tries to use them: a missing variable raises "environment
variable RANK expected, but not set", while a rank outside the world or a wrong address waits
for peers that can never come, until the timeout (30 minutes for NCCL by default).

## Example
```json
{"mode": "launcher", "master_resolves": true,
 "launch": {"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}}
```

Use instead:
```json
{"mode": "launcher", "master_resolves": true,
 "launch": {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}}
```
""",
)
