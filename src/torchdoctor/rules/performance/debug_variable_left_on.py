"""TD617 debug-variable-left-on."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD617",
    name="debug-variable-left-on",
    category=Category.PERFORMANCE,
    severity=Severity.WARNING,
    proof="env",
    # CUDA_LAUNCH_BLOCKING; the other variables' costs are variants
    message="{name}={value} is set: every CUDA kernel launch waits for the GPU to finish, so the CPU can no longer queue work ahead",
    variants={
        "no-cuda-memory-caching": Variant(message="{name}={value} is set: torch's CUDA caching allocator is off, every allocation calls cudaMalloc/cudaFree"),
        "distributed-debug": Variant(message="{name}={value} is set: every collective is checked across ranks and logged, which slows distributed training"),
    },
    hint='Unset {name} (`unset {name}`) unless you are debugging right now.',
    doc="""
## What it does
Flags debugging switches left in the environment: `CUDA_LAUNCH_BLOCKING=1` and
`PYTORCH_NO_CUDA_MEMORY_CACHING=1` (warnings), `TORCH_DISTRIBUTED_DEBUG=DETAIL` (info).

## Why is this bad?
They are meant for one debugging session. `CUDA_LAUNCH_BLOCKING=1` makes every kernel launch wait
for the GPU, so the CPU can no longer run ahead; `PYTORCH_NO_CUDA_MEMORY_CACHING=1` calls
`cudaMalloc`/`cudaFree` for every tensor; `TORCH_DISTRIBUTED_DEBUG=DETAIL` checks and logs every
collective. Left in a `.bashrc` or a job template, they slow every run.

## Example
```json
{"variables": {"CUDA_LAUNCH_BLOCKING": "1"}}
```

Use instead:
```json
{"variables": {"CUDA_LAUNCH_BLOCKING": "0"}}
```
""",
)
