"""TD707 collective-timeout."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD707",
    name="collective-timeout",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message='{label} did not complete within {seconds} s: {inside} waited in it; {elsewhere}',
    hint='Find why the other ranks did not join: a rank that crashed or hangs, or code that calls the collective on some ranks only (e.g. under `if rank == 0:`). Set TORCH_DISTRIBUTED_DEBUG=DETAIL, or use `dist.monitored_barrier()` (gloo), to name the rank in your own job.',
    doc="""
## What it does
A watchdog follows every rank through each collective. When one does not complete within the
timeout, it reports which ranks were inside it and where each other rank was (in another
collective, never got there, or stopped), and ends the preflight instead of waiting.

## Why is this bad?
A collective blocks until every rank of the group has called it. One rank missing (crashed,
stuck in I/O, or skipping the call under a rank-dependent `if`) makes all the others wait for the
whole timeout: 10 minutes for NCCL ("Watchdog caught collective operation timeout"), 30 for Gloo,
with nothing saying which rank is missing.

## Example
```json
{"mode": "standalone", "world_size": 2, "timeout": 10,
 "ranks": [{"rank": 0, "arrived": true, "collectives": [{"op": "all_reduce", "backend": "gloo", "bytes": 1024, "ok": false,
             "problem": "timeout", "detail": "RuntimeError: Timed out waiting 10000ms for recv operation to complete"}]},
           {"rank": 1, "arrived": true, "collectives": [], "exit": "stopped: no progress for 15 s"}]}
```

Use instead:
```json
{"mode": "standalone", "world_size": 2, "timeout": 10,
 "ranks": [{"rank": 0, "arrived": true, "collectives": [{"op": "all_reduce", "backend": "gloo", "bytes": 1024, "ok": true}]},
           {"rank": 1, "arrived": true, "collectives": [{"op": "all_reduce", "backend": "gloo", "bytes": 1024, "ok": true}]}]}
```
""",
)
