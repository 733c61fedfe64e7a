"""TD601 cpu-wheel-on-gpu-machine."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD601",
    name="cpu-wheel-on-gpu-machine",
    category=Category.ENV,
    severity=Severity.WARNING,
    proof="env",
    message='torch {version} is a CPU-only build, but this machine has {gpu_count} NVIDIA GPU(s) ({names}): training will run on the CPU',
    hint="Reinstall a CUDA build: `pip install --force-reinstall torch=={base} --index-url https://download.pytorch.org/whl/{tag}`.",
    variants={
        # no CUDA build of this release runs on the driver (or none is known)
        "no-fitting-build": Variant(hint="Reinstall torch from a CUDA index (the driver supports CUDA {driver_cuda}): pick the command at https://pytorch.org/get-started/locally/."),
        "no-fitting-build-unknown-driver": Variant(hint="Reinstall torch from a CUDA index: pick the command at https://pytorch.org/get-started/locally/."),
    },
    doc="""
## What it does
Flags a torch build without CUDA on a machine where the NVIDIA driver reports a GPU.

## Why is this bad?
`torch.cuda.is_available()` is False, so code that picks `"cuda" if available else "cpu"` trains on
the CPU, tens of times slower, without an error; code that asks for `cuda` fails with "Torch not
compiled with CUDA enabled". It happens when pip resolves torch from an index without CUDA builds,
or when another package reinstalls torch.

## Example
```json
{"torch": {"importable": true, "version": "2.5.1+cpu", "cuda": null},
 "nvidia": {"driver": "550.54.15", "driver_cuda": "12.4",
            "gpus": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "capability": "8.0"}]}}
```

Use instead:
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cuda": "12.4", "cuda_available": true,
           "arch_list": ["sm_80", "sm_90"]},
 "nvidia": {"driver": "550.54.15", "driver_cuda": "12.4",
            "gpus": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "capability": "8.0"}]}}
```
""",
)
