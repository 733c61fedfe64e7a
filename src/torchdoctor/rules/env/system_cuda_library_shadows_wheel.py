"""TD608 system-cuda-library-shadows-wheel."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD608",
    name="system-cuda-library-shadows-wheel",
    category=Category.ENV,
    severity=Severity.WARNING,
    proof="env",
    message='torch loaded {library} from {folder}{origin} instead of the copy it ships ({bundled})',
    variants={
        # the cuDNN loaded is not the version torch was compiled against
        "cudnn-version": Variant(message="torch loaded cuDNN {cudnn} from {folder}{origin}, but was compiled against cuDNN {cudnn_compiled} (shipped at {bundled}): cuDNN calls fail or misbehave"),
    },
    hint='Remove {folder} from LD_LIBRARY_PATH for this job (or unload the cluster module that adds it); torch finds its own CUDA libraries without it.',
    doc="""
## What it does
Reads which CUDA libraries (cuDNN, NCCL, cuBLAS, the CUDA runtime, ...) the torch process really
loaded and from where, and flags those taken from outside the Python environment although the
wheel ships its own copy. A cuDNN whose major version differs from the one torch was compiled
against is an error.

## Why is this bad?
Cluster module systems and old CUDA installs put their `lib64` first on `LD_LIBRARY_PATH`. torch
then runs with a library it was not built or tested with: "cuDNN version incompatibility",
missing symbols, or silently slower or wrong kernels.

## Example
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cuda": "12.4", "cuda_available": true,
           "cudnn": "8.9.2", "cudnn_compiled": "9.1.0",
           "path": "/opt/venv/lib/python3.11/site-packages/torch",
           "mapped_libraries": {"libcudnn.so.8": "/usr/local/cuda-11.8/lib64/libcudnn.so.8.9.2"},
           "bundled_libraries": {"libcudnn": "/opt/venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9"}},
 "variables": {"LD_LIBRARY_PATH": "/usr/local/cuda-11.8/lib64"}}
```

Use instead:
```json
{"torch": {"importable": true, "version": "2.5.1+cu124", "cuda": "12.4", "cuda_available": true,
           "cudnn": "9.1.0", "cudnn_compiled": "9.1.0",
           "path": "/opt/venv/lib/python3.11/site-packages/torch",
           "mapped_libraries": {"libcudnn.so.9": "/opt/venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9"},
           "bundled_libraries": {"libcudnn": "/opt/venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9"}},
 "variables": {"LD_LIBRARY_PATH": "/usr/local/cuda-11.8/lib64"}}
```
""",
)
