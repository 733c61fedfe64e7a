"""TD705 launch-variables-disagree."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD705",
    name="launch-variables-disagree",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message="{name} differs between ranks ({said})",
    variants={
        # several processes claimed one rank
        "rank-claimed-twice": Variant(message="{count} processes claimed RANK={rank}"),
    },
    hint='Give every rank the same WORLD_SIZE, MASTER_ADDR and MASTER_PORT, and each rank its own RANK (0..WORLD_SIZE-1); with a launcher, use the same launch command on every node.',
    doc="""
## What it does
Compares what each rank that reached the store was told: the world size, the master's address and
port, the number of local ranks per host, and whether two processes claim the same `RANK`.

## Why is this bad?
Ranks that disagree about the world cannot form it: some wait for ranks that will never exist,
two processes with one rank overwrite each other's keys, and the job hangs until the timeout.

## Example
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "hostname": "node-0", "world_size": 2, "master": "node-0:29500", "arrived": true},
           {"rank": 1, "hostname": "node-1", "world_size": 3, "master": "node-0:29500", "arrived": true}]}
```

Use instead:
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "hostname": "node-0", "world_size": 2, "master": "node-0:29500", "arrived": true},
           {"rank": 1, "hostname": "node-1", "world_size": 2, "master": "node-0:29500", "arrived": true}]}
```
""",
)
