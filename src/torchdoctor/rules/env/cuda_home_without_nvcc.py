"""TD611 cuda-home-without-nvcc."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD611",
    name="cuda-home-without-nvcc",
    category=Category.ENV,
    severity=Severity.WARNING,
    proof="env",
    message="{source}={cuda_home} has no bin/nvcc: torch's cpp_extension will not find a CUDA compiler",
    hint='Set {source} to the folder that contains bin/nvcc (e.g. /usr/local/cuda-{cuda}), or unset it.',
    doc="""
## What it does
Flags `CUDA_HOME` or `CUDA_PATH` set to a folder without `bin/nvcc`, for a CUDA build of torch.

## Why is this bad?
`torch.utils.cpp_extension` trusts the variable and does not look further: building a CUDA
extension fails with "nvcc not found at ...", even when a working toolkit is installed elsewhere.

## Example
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cuda": "12.4"},
 "build": {"cuda_home": "/usr/local/cuda-12.4", "cuda_home_source": "CUDA_HOME", "nvcc": null}}
```

Use instead:
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cuda": "12.4"},
 "build": {"cuda_home": "/usr/local/cuda-12.4", "cuda_home_source": "CUDA_HOME",
           "nvcc": "/usr/local/cuda-12.4/bin/nvcc", "nvcc_version": "12.4"}}
```
""",
)
