"""TD603 gpu-arch-not-in-wheel."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD603",
    name="gpu-arch-not-in-wheel",
    category=Category.ENV,
    severity=Severity.ERROR,
    proof="env",
    message='GPU {index} ({name}, compute capability {capability}) is not supported by torch {version}: it has kernels for {archs}',
    hint="Install a build that includes compute capability {capability}, e.g. the CUDA {newer} build: `pip install --force-reinstall torch=={base} --index-url https://download.pytorch.org/whl/{tag}` (check its arch list with `torch.cuda.get_arch_list()`).",
    variants={
        # no newer CUDA build of this release is known
        "no-newer-build": Variant(hint="Install a torch release whose CUDA build lists sm_{sm} in `torch.cuda.get_arch_list()` (newer GPUs need newer CUDA builds; see https://pytorch.org/get-started/locally/)."),
    },
    doc="""
## What it does
Checks each GPU's compute capability against the architectures compiled into the wheel
(`torch.cuda.get_arch_list()`), with torch's own compatibility rules when torch can see the GPU.

## Why is this bad?
Every CUDA kernel launch fails with "no kernel image is available for execution on the device".
It happens with new GPUs (an RTX 5090, compute capability 12.0, on a wheel built up to `sm_90`) and
with old ones a release dropped.

## Example
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cuda": "12.4", "cuda_available": true,
           "arch_list": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"],
           "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 5090", "capability": "12.0"}]}}
```

Use instead:
```json
{"torch": {"importable": true, "version": "2.7.0+cu128", "cuda": "12.8", "cuda_available": true,
           "arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
           "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 5090", "capability": "12.0"}]}}
```
""",
)
