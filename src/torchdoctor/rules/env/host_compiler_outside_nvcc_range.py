"""TD612 host-compiler-outside-nvcc-range."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD612",
    name="host-compiler-outside-nvcc-range",
    category=Category.ENV,
    severity=Severity.WARNING,
    proof="env",
    message='{cxx} is g++ {cxx_version}, but torch accepts g++ >={low}, <{high} for nvcc {nvcc_version}: building CUDA extensions will fail',
    hint='Use a g++ in that range for the build, e.g. `CXX=g++-{suggest} CC=gcc-{suggest} pip install ...`, or a CUDA toolkit that supports g++ {cxx_version}.',
    doc="""
## What it does
Checks the C++ compiler that `torch.utils.cpp_extension` would use (`$CXX`, else `c++`) against the
range of g++ versions torch allows for the CUDA toolkit found (`CUDA_GCC_VERSIONS` in
`torch.utils.cpp_extension`, which follows nvcc's own `host_config.h`).

## Why is this bad?
torch raises "The current installed version of g++ (14.2.0) is greater than the maximum required
version by CUDA 12.4", and nvcc itself refuses with "unsupported GNU version!".

## Example
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cuda": "12.4"},
 "build": {"cxx": "c++", "cxx_path": "/usr/bin/c++", "cxx_version": "14.2.0", "cxx_family": "gcc",
           "nvcc": "/usr/local/cuda-12.4/bin/nvcc", "nvcc_version": "12.4", "gcc_range": ["6.0.0", "14.0"]}}
```

Use instead:
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cuda": "12.4"},
 "build": {"cxx": "g++-13", "cxx_path": "/usr/bin/g++-13", "cxx_version": "13.3.0", "cxx_family": "gcc",
           "nvcc": "/usr/local/cuda-12.4/bin/nvcc", "nvcc_version": "12.4", "gcc_range": ["6.0.0", "14.0"]}}
```
""",
)
