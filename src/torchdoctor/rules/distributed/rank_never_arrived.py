"""TD704 rank-never-arrived."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD704",
    name="rank-never-arrived",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message='{which} never reached the rendezvous store at {master} within {seconds} s ({arrived}/{world} joined)',
    hint="Start the missing ranks, and check the launcher's log for them: a rank that crashed before init_process_group, a node that was never scheduled, or a rank started with a different MASTER_ADDR, MASTER_PORT or WORLD_SIZE.",
    doc="""
## What it does
Rank 0 waits for every rank to announce itself in the store, for a short deadline, and names the
ranks that did not.

## Why is this bad?
`init_process_group` waits for the whole world until the timeout, then says only
"DistStoreError: Timed out after 1801 seconds waiting for clients. 1/2 clients joined.": how many,
not which. With hundreds of ranks the missing one is the whole question.

## Example
```json
{"mode": "launcher", "world_size": 4, "missing": [3], "timeout": 10,
 "ranks": [{"rank": 0, "hostname": "node-0", "master": "node-0:29500", "arrived": true},
           {"rank": 1, "hostname": "node-0", "master": "node-0:29500", "arrived": true},
           {"rank": 2, "hostname": "node-1", "master": "node-0:29500", "arrived": true},
           {"rank": 3, "arrived": false}]}
```

Use instead:
```json
{"mode": "launcher", "world_size": 4, "missing": [], "timeout": 10,
 "ranks": [{"rank": 0, "hostname": "node-0", "master": "node-0:29500", "arrived": true},
           {"rank": 1, "hostname": "node-0", "master": "node-0:29500", "arrived": true},
           {"rank": 2, "hostname": "node-1", "master": "node-0:29500", "arrived": true},
           {"rank": 3, "hostname": "node-1", "master": "node-0:29500", "arrived": true}]}
```
""",
)
