"""TD616 cuda-visible-devices-hides-gpus."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD616",
    name="cuda-visible-devices-hides-gpus",
    category=Category.ENV,
    severity=Severity.WARNING,
    proof="env",
    message="CUDA_VISIBLE_DEVICES={value!r} hides all {gpu_count} GPU(s): torch sees none",
    hint="Set CUDA_VISIBLE_DEVICES to indices between 0 and {last} (comma-separated, no repeats), or unset it to use every GPU.",
    variants={
        "repeats": Variant(message="CUDA_VISIBLE_DEVICES={value!r} repeats a device, so CUDA hides every GPU"),
        # an index past the last GPU: CUDA drops it and the rest
        "beyond": Variant(message="CUDA_VISIBLE_DEVICES={value!r} names GPU {beyond}, but the machine has {gpu_count} (0-{last}): CUDA drops it and every entry after it, so torch sees {kept} GPU(s)"),
        # an entry CUDA cannot parse: it stops there
        "stops": Variant(message="CUDA_VISIBLE_DEVICES={value!r} stops at entry {entry} ({item!r}): torch sees only {seen} of the {listed} listed GPU(s)"),
    },
    doc="""
## What it does
Reads `CUDA_VISIBLE_DEVICES` the way CUDA and torch do, and flags values that hide GPUs by
accident: an empty value or `-1` on a machine with GPUs, an index beyond the last GPU (it and
every entry after it are dropped), or a repeated entry (the whole list becomes empty).

## Why is this bad?
torch sees fewer GPUs than intended, or none, without an error: a job trains on the CPU, or on
one GPU instead of eight. The variable is read once, when CUDA starts.

## Example
```json
{"nvidia": {"gpus": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "capability": "8.0"},
                     {"index": 1, "name": "NVIDIA A100-SXM4-80GB", "capability": "8.0"}]},
 "variables": {"CUDA_VISIBLE_DEVICES": "2,3"}}
```

Use instead:
```json
{"nvidia": {"gpus": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "capability": "8.0"},
                     {"index": 1, "name": "NVIDIA A100-SXM4-80GB", "capability": "8.0"}]},
 "variables": {"CUDA_VISIBLE_DEVICES": "0,1"}}
```
""",
)
