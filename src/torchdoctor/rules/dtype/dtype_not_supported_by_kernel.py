"""TD432 dtype-not-supported-by-kernel."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD432",
    name="dtype-not-supported-by-kernel",
    category=Category.DTYPE,
    severity=Severity.ERROR,
    proof="run",
    message="{where} ({kernel}) has no {dtype} version{tensor}{backends}",
    hint="Compute this op in a dtype its kernel supports, usually float32 (`x.float()`).",
    variants={
        "half-on-cpu": Variant(hint="Compute this op in float32 (`x.float()`, then back with `.to(dtype)` if needed); the "
                               "CPU has no {dtype} version of it. On a GPU, keep float16 for autocast regions, which run "
                               "such ops in float32."),
        "half": Variant(hint="Compute this op in float32 (`x.float()`): its kernel has no version for this dtype; "
                        "autocast runs such ops in float32."),
        "not-floating": Variant(hint="This op computes on floating-point tensors: convert the {dtype} tensor with "
                                "`.float()` first."),
    },
    doc="""
## What it does
Explains crashes such as `"linalg_eigh_cpu" not implemented for 'Half'` at the line of your
code that made the call: it names the aten op that was called (read from the call that was
running), the dispatch key of the kernel that failed (CPU, CUDA), the dtype it lacks, the
tensor of that dtype, and the backends the installed torch has a kernel of the op for.

## Why is this bad?
A kernel is compiled for a list of dtypes; the message names the kernel's internal label,
not the function you called. float16 on the CPU is the usual case (`model.half()` is a GPU
habit; many CPU kernels, linear algebra above all, have no float16 version), and integer
tensors passed to ops that compute on floating-point numbers.

## Example
```python
import torch

features = torch.randn(64, 8).half()  # float16, as the GPU model produced them
covariance = features.T @ features / 64
values, vectors = torch.linalg.eigh(covariance)
```

Use instead:
```python
import torch

features = torch.randn(64, 8).half()
covariance = features.float().T @ features.float() / 64
values, vectors = torch.linalg.eigh(covariance)
```
""",
)
