"""TD604 cuda-unusable."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD604",
    name="cuda-unusable",
    category=Category.ENV,
    severity=Severity.ERROR,
    proof="env",
    message='torch {version} is a CUDA build and the driver sees {gpu_count} GPU(s), but torch cannot use them: {reason}',
    variants={
        # torch gave no error to quote
        "no-error": Variant(message="torch {version} is a CUDA build and the driver sees {gpu_count} GPU(s), but torch cannot use them: torch.cuda.is_available() is False"),
    },
    hint="Run `nvidia-smi` and `python -c 'import torch; torch.cuda.init()'` to see the full error; a driver/library mismatch after a driver upgrade needs a reboot, and a container needs the GPUs passed in (`--gpus all`).",
    doc="""
## What it does
Flags a CUDA build of torch for which `torch.cuda.is_available()` is False although `nvidia-smi`
lists GPUs, and quotes what torch said, when no more specific cause (driver too old,
`CUDA_VISIBLE_DEVICES`) explains it.

## Why is this bad?
Training silently falls back to the CPU, or fails at the first `.cuda()`. The causes are outside
the code: a driver upgraded without a reboot ("Driver/library version mismatch"), a container
started without the GPU devices, a broken CUDA installation.

## Example
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cuda": "12.4", "cuda_available": false,
           "cuda_error": "CUDA initialization: CUDA driver initialization failed, you might not have a CUDA gpu."},
 "nvidia": {"driver": "550.54.15", "driver_cuda": "12.4",
            "gpus": [{"index": 0, "name": "NVIDIA L4", "capability": "8.9"}]}}
```

Use instead:
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cuda": "12.4", "cuda_available": true,
           "arch_list": ["sm_80", "sm_86", "sm_89", "sm_90"],
           "gpus": [{"index": 0, "name": "NVIDIA L4", "capability": "8.9"}]},
 "nvidia": {"driver": "550.54.15", "driver_cuda": "12.4",
            "gpus": [{"index": 0, "name": "NVIDIA L4", "capability": "8.9"}]}}
```
""",
)
