"""TD474 autocast-for-another-device."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD474",
    name="autocast-for-another-device",
    category=Category.DTYPE,
    severity=Severity.WARNING,
    proof="trace",
    message="autocast is on for {autocast} but this line's {ops} ran on {devices} tensors, in float32: autocast only changes the ops of its own device type",
    hint="Give autocast the device type of the tensors: `torch.autocast(device_type=x.device.type, dtype=...)` (`\"cuda\"` for a model on the GPU).",
    doc="""
## What it does
`torchdoctor trace` records, for each line, whether autocast was on (and for which device
type) and the devices of the tensors. It reports a line inside an autocast region whose
tensors are on another device type and whose float32 ops autocast would have run in lower
precision there: the dispatcher of the installed torch has an autocast kernel for them on
their device.

## Why is this bad?
`torch.autocast("cpu", ...)` does not touch CUDA ops, and `torch.autocast("cuda", ...)` does
not touch CPU ops. With the wrong device type the region looks like mixed precision but every
matmul and convolution still runs in float32: no speed-up, no memory saving, and a later
switch to the right device type changes the numerics.

## Example
The trace record of a GPU run under `torch.autocast("cpu", dtype=torch.bfloat16)`.
```json
{"lines": [{"location": "train.py:52", "file": "train.py", "line": 52, "autocast": ["cpu"],
            "devices": ["cuda"], "autocast_ops": ["aten::linear"],
            "ops": [{"op": "aten::linear", "count": 10, "us": 900, "dtypes": ["float32"]}]}]}
```

Use instead:
The same line under `torch.autocast("cuda", dtype=torch.bfloat16)`.
```json
{"lines": [{"location": "train.py:52", "file": "train.py", "line": 52, "autocast": ["cuda"],
            "devices": ["cuda"], "autocast_ops": [],
            "ops": [{"op": "aten::linear", "count": 10, "us": 500, "dtypes": ["bfloat16", "float32"]}]}]}
```
""",
)
