"""TD470 launch-bound-steps."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD470",
    name="launch-bound-steps",
    category=Category.PERFORMANCE,
    severity=Severity.WARNING,
    proof="trace",
    message="the GPU computes during {busy} of each traced step: {kernels} kernels per step, {small} of them shorter than 10 µs, so the step is bound by launching kernels, not by running them{where}",
    hint="Give each kernel more work: a larger batch, batched tensor ops instead of Python loops over samples or layers, `torch.compile` to fuse small element-wise ops, or CUDA graphs (`torch.compile(mode=\"reduce-overhead\")`).",
    doc="""
## What it does
`torchdoctor trace` reads, for every traced step of a GPU run, how many kernels ran, how many
of them took less than 10 µs, and for how much of the step the GPU was computing at all. It
reports steps where, in every traced step, at least 100 kernels ran, three quarters of them
were that short, and the GPU was busy for less than half of the step, at the line that
launched the most kernels.

## Why is this bad?
Launching a kernel costs the CPU a few microseconds whatever the kernel does. When the
kernels are tiny (small tensors, element-wise ops one after another, a Python loop over
samples), the GPU finishes each one before the CPU has queued the next: it waits most of the
step, and a faster GPU changes nothing. Batching the work, fusing it, or replaying it as a
CUDA graph moves the time back onto the GPU.

## Example
The trace record of a GPU run (as `torchdoctor trace --format json` shows it under
`trace`): 900 kernels per step, almost all of them tiny, the GPU busy 15% of the time.
```json
{"parameters": {"dtypes": {"float32": 1000000}, "devices": {"cuda": 1000000}},
 "steps": [{"index": 1, "wall_us": 9000, "device_us": 1400, "kernels": 900, "small_kernels": 860},
           {"index": 2, "wall_us": 9100, "device_us": 1350, "kernels": 900, "small_kernels": 858}],
 "lines": [{"location": "train.py:31", "file": "train.py", "line": 31, "kernels": 1600, "us": 12000}]}
```

Use instead:
The same model on batches: 120 large kernels per step, the GPU busy 90% of the time.
```json
{"parameters": {"dtypes": {"float32": 1000000}, "devices": {"cuda": 1000000}},
 "steps": [{"index": 1, "wall_us": 9000, "device_us": 8100, "kernels": 120, "small_kernels": 12},
           {"index": 2, "wall_us": 9050, "device_us": 8150, "kernels": 120, "small_kernels": 11}],
 "lines": [{"location": "train.py:31", "file": "train.py", "line": 31, "kernels": 200, "us": 3000}]}
```
""",
)
