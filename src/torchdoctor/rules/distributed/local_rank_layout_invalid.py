"""TD709 local-rank-layout-invalid."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD709",
    name="local-rank-layout-invalid",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message="{ranks} on {host} all have LOCAL_RANK={local}",
    variants={
        # the host runs another number of ranks than LOCAL_WORLD_SIZE says
        "local-world-size": Variant(message="{host} runs {count} ranks ({ranks}) but they have LOCAL_WORLD_SIZE={size}"),
    },
    hint='Let the launcher set LOCAL_RANK (torchrun does; with srun use SLURM_LOCALID), 0..LOCAL_WORLD_SIZE-1 on each host, and start LOCAL_WORLD_SIZE ranks per host.',
    doc="""
## What it does
Groups ranks by host and checks their `LOCAL_RANK`s: unique on each host, and as many ranks on the
host as `LOCAL_WORLD_SIZE` says.

## Why is this bad?
Code uses `LOCAL_RANK` to choose a GPU and to decide which process on a node does node-local work
(downloads, caches). Two processes with the same local rank share a GPU and race on those files; a
wrong count means some GPUs are idle or oversubscribed.

## Example
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "hostname": "node-0", "local_rank": 0, "local_world_size": 2, "arrived": true},
           {"rank": 1, "hostname": "node-0", "local_rank": 0, "local_world_size": 2, "arrived": true}]}
```

Use instead:
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "hostname": "node-0", "local_rank": 0, "local_world_size": 2, "arrived": true},
           {"rank": 1, "hostname": "node-0", "local_rank": 1, "local_world_size": 2, "arrived": true}]}
```
""",
)
