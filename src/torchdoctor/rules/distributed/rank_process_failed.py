"""TD712 rank-process-failed."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD712",
    name="rank-process-failed",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message='{who} {what}',
    hint="Read that rank's own error above; run the same launch with TORCH_DISTRIBUTED_DEBUG=DETAIL (and NCCL_DEBUG=INFO for NCCL) to see its last words.",
    doc="""
## What it does
Reports a rank whose preflight process failed outside a collective: the process group could not
be created (a backend missing or misconfigured), or the process crashed or was killed.

## Why is this bad?
When one rank dies, the launcher tears the others down ("Signal 15 (SIGTERM)") and their own errors
hide the first one; torchrun prints "ChildFailedError" with "error_file: <N/A>". The rank that failed
first, and why, is what has to be fixed.

## Example
```json
{"mode": "standalone", "world_size": 2,
 "ranks": [{"rank": 0, "arrived": true},
           {"rank": 1, "arrived": true, "error": "process group: RuntimeError: Distributed package doesn't have NCCL built in"}]}
```

Use instead:
```json
{"mode": "standalone", "world_size": 2,
 "ranks": [{"rank": 0, "arrived": true},
           {"rank": 1, "arrived": true}]}
```
""",
)
