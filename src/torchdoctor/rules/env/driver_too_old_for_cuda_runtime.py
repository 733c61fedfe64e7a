"""TD602 driver-too-old-for-cuda-runtime."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD602",
    name="driver-too-old-for-cuda-runtime",
    category=Category.ENV,
    severity=Severity.ERROR,
    proof="env",
    message='the NVIDIA driver {driver} supports CUDA up to {driver_cuda}, but torch {version} was built with CUDA {cuda}',
    hint="Upgrade the NVIDIA driver to one that supports CUDA {cuda} or newer, or install a torch build for CUDA {driver_cuda} or older. Reinstall a CUDA build: `pip install --force-reinstall torch=={base} --index-url https://download.pytorch.org/whl/{tag}`.",
    variants={
        # no CUDA build of this release runs on the driver
        "no-fitting-build": Variant(hint="Upgrade the NVIDIA driver to one that supports CUDA {cuda} or newer, or install a torch build for CUDA {driver_cuda} or older. Reinstall torch from a CUDA index (the driver supports CUDA {driver_cuda}): pick the command at https://pytorch.org/get-started/locally/."),
        # the same CUDA major version: minor-version compatibility covers most of it
        "minor-version": Variant(message="the NVIDIA driver {driver} supports CUDA up to {driver_cuda}, older than the CUDA {cuda} torch {version} was built with: minor-version compatibility runs most kernels, but kernels compiled just in time from PTX fail", hint="Upgrade the NVIDIA driver to one that supports CUDA {cuda} when you can."),
    },
    doc="""
## What it does
Compares the newest CUDA version the driver supports (the "CUDA Version" in `nvidia-smi`'s banner)
with the CUDA runtime bundled in the torch wheel (`torch.version.cuda`).

## Why is this bad?
A wheel carries its own CUDA runtime, and the driver must be at least as new. With an older major
version, torch cannot use the GPU at all ("The NVIDIA driver on your system is too old").
Within one major version, CUDA's minor-version compatibility lets most programs run, but kernels
that must be compiled just in time from PTX fail; that case is reported as `info`.
`nvidia-smi`, `nvcc --version` and `torch.version.cuda` show three different numbers: only the
driver's and torch's matter here.

## Example
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cuda": "12.4"},
 "nvidia": {"driver": "470.182.03", "driver_cuda": "11.4",
            "gpus": [{"index": 0, "name": "Tesla V100-SXM2-16GB", "capability": "7.0"}]}}
```

Use instead:
```json
{"torch": {"importable": true, "version": "2.5.1+cu118", "cuda": "11.8"},
 "nvidia": {"driver": "520.61.05", "driver_cuda": "11.8",
            "gpus": [{"index": 0, "name": "Tesla V100-SXM2-16GB", "capability": "7.0"}]}}
```
""",
)
