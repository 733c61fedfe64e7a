"""TD706 collective-wrong-result."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD706",
    name="collective-wrong-result",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message='{label} returned a wrong result on {which}: {detail}',
    hint="Run `torchdoctor dist` with NCCL_DEBUG=WARN (or GLOO) and check the interconnect: disable peer-to-peer (NCCL_P2P_DISABLE=1) or InfiniBand (NCCL_IB_DISABLE=1) for one run to find the faulty path, and check the GPUs' health (`nvidia-smi -q`, ECC errors).",
    doc="""
## What it does
Runs `all_reduce`, `broadcast` and `all_gather` on data whose correct result every rank knows,
and compares.

## Why is this bad?
A collective that completes with wrong data (a faulty link, a broken peer-to-peer path, a bad
GPU, a library mismatch) corrupts gradients silently: the loss drifts or diverges, and nothing
points at the hardware.

## Example
```json
{"mode": "standalone", "world_size": 2,
 "ranks": [{"rank": 0, "arrived": true, "collectives": [{"op": "all_reduce", "backend": "nccl", "bytes": 1048576, "ok": true}]},
           {"rank": 1, "arrived": true, "collectives": [{"op": "all_reduce", "backend": "nccl", "bytes": 1048576, "ok": false,
             "problem": "wrong", "detail": "rank 1 got 2 from all_reduce at element 0, expected 3"}]}]}
```

Use instead:
```json
{"mode": "standalone", "world_size": 2,
 "ranks": [{"rank": 0, "arrived": true, "collectives": [{"op": "all_reduce", "backend": "nccl", "bytes": 1048576, "ok": true}]},
           {"rank": 1, "arrived": true, "collectives": [{"op": "all_reduce", "backend": "nccl", "bytes": 1048576, "ok": true}]}]}
```
""",
)
