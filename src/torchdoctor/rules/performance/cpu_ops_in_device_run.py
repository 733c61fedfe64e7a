"""TD472 cpu-ops-in-device-run."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD472",
    name="cpu-ops-in-device-run",
    category=Category.PERFORMANCE,
    severity=Severity.WARNING,
    proof="trace",
    message="this line computes on the CPU ({ops}: {share} of the traced steps' time) while the model trains on the GPU: its tensors are CPU tensors",
    hint="Create the tensors this line computes on where the model is (`device=`, or `.to(device)` once, outside the step); if it is a metric, compute it on the GPU or every N steps.",
    doc="""
## What it does
`torchdoctor trace` records the devices of the tensors each line of a GPU run computes on.
It reports a line whose compute ops (not copies, views or allocations) ran on CPU tensors and
took at least a fifth of the traced steps' wall time, while the trained parameters are on the
GPU. Lines that fetch batches from a DataLoader (built on the CPU by design) are left out.

## Why is this bad?
PyTorch never moves a computation to the GPU by itself: a tensor created without
`device=` (a mask, a position table, a loss weight, a NumPy array turned into a tensor)
makes every op that uses it run on the CPU, single-threaded next to an idle GPU, and often
forces a copy back and forth on every step.

## Example
The trace record of a GPU run: the loss line's ops ran on CPU tensors and took 35% of the step.
```json
{"parameters": {"dtypes": {"float32": 1000000}, "devices": {"cuda": 1000000}},
 "steps": [{"index": 1, "wall_us": 10000}, {"index": 2, "wall_us": 10000}],
 "lines": [{"location": "train.py:40", "file": "train.py", "line": 40, "devices": ["cpu"],
            "ops": [{"op": "aten::cdist", "count": 2, "us": 7000, "dtypes": ["float32"]}]}]}
```

Use instead:
The same line on tensors created on the GPU.
```json
{"parameters": {"dtypes": {"float32": 1000000}, "devices": {"cuda": 1000000}},
 "steps": [{"index": 1, "wall_us": 6000}, {"index": 2, "wall_us": 6000}],
 "lines": [{"location": "train.py:40", "file": "train.py", "line": 40, "devices": ["cuda"],
            "ops": [{"op": "aten::cdist", "count": 2, "us": 300, "dtypes": ["float32"]}]}]}
```
""",
)
