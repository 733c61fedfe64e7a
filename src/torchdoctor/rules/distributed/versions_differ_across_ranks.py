"""TD708 versions-differ-across-ranks."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD708",
    name="versions-differ-across-ranks",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message='{what} differs between ranks: {said}',
    hint='Run every node from the same image or environment (same torch, CUDA and NCCL builds); check with `torchdoctor env` on each node.',
    doc="""
## What it does
Compares the torch, CUDA, NCCL and Python versions each rank runs.

## Why is this bad?
Ranks with different builds may serialise objects differently, pick different collective
algorithms, or disagree on the wire protocol: hangs, "NCCL error: invalid usage" or mismatched
shapes, typically on one node that was set up separately.

## Example
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "hostname": "node-0", "arrived": true, "torch": "2.5.1+cu124", "cuda": "12.4", "nccl": "2.21.5"},
           {"rank": 1, "hostname": "node-1", "arrived": true, "torch": "2.4.1+cu121", "cuda": "12.1", "nccl": "2.20.5"}]}
```

Use instead:
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "hostname": "node-0", "arrived": true, "torch": "2.5.1+cu124", "cuda": "12.4", "nccl": "2.21.5"},
           {"rank": 1, "hostname": "node-1", "arrived": true, "torch": "2.5.1+cu124", "cuda": "12.4", "nccl": "2.21.5"}]}
```
""",
)
