"""TD610 nvcc-cuda-major-mismatch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD610",
    name="nvcc-cuda-major-mismatch",
    category=Category.ENV,
    severity=Severity.WARNING,
    proof="env",
    message='nvcc at {nvcc} is CUDA {nvcc_version}, but torch {version} was built with CUDA {cuda}: building CUDA extensions will fail',
    hint='Point CUDA_HOME at a CUDA {cuda_major}.x toolkit (e.g. `export CUDA_HOME=/usr/local/cuda-{cuda}`), or install the torch build for CUDA {nvcc_major}.x.',
    doc="""
## What it does
Compares the CUDA toolkit that `torch.utils.cpp_extension` would compile with (`CUDA_HOME`, else
`CUDA_PATH`, else the `nvcc` on `PATH`, else `/usr/local/cuda`) with the CUDA version torch was
built with.

## Why is this bad?
`pip install` of a package with CUDA code (flash-attn, apex, your own extension) stops with "The
detected CUDA version (11.8) mismatches the version that was used to compile PyTorch (12.4)".
A different minor version only gets a warning from torch, and is not reported here.

## Example
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cuda": "12.4"},
 "build": {"cuda_home": "/usr/local/cuda-11.8", "cuda_home_source": "CUDA_HOME",
           "nvcc": "/usr/local/cuda-11.8/bin/nvcc", "nvcc_version": "11.8"}}
```

Use instead:
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cuda": "12.4"},
 "build": {"cuda_home": "/usr/local/cuda-12.6", "cuda_home_source": "CUDA_HOME",
           "nvcc": "/usr/local/cuda-12.6/bin/nvcc", "nvcc_version": "12.6"}}
```
""",
)
