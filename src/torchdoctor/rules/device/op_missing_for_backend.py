"""TD431 op-missing-for-backend."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD431",
    name="op-missing-for-backend",
    category=Category.DEVICE,
    severity=Severity.ERROR,
    proof="run",
    message="{op} has no kernel for the {key} backend{tensor}: in this torch it has kernels for {backends}",
    hint="Give {op} a tensor of a backend it has a kernel for: move it to one of them.",
    variants={  # by the family of the backend the kernel is missing for (observe/crash/kernels.py)
        "sparse": Variant(hint="Give {op} a tensor of a backend it has a kernel for: convert it with `.to_dense()` "
                          "first (or use the `torch.sparse` function made for it)."),
        "quantized": Variant(hint="Give {op} a tensor of a backend it has a kernel for: dequantize it first "
                             "(`.dequantize()`), or use the quantized module made for it."),
        "mkldnn": Variant(hint="Give {op} a tensor of a backend it has a kernel for: convert it with `.to_dense()` first."),
        "nested-tensor": Variant(hint="Give {op} a tensor of a backend it has a kernel for: apply the op to each tensor "
                                 "of `.unbind()`, or pad it with `torch.nested.to_padded_tensor`."),
        "meta": Variant(hint="Give {op} a tensor of a backend it has a kernel for: meta tensors have shapes but no "
                        "data: create it on a real device."),
        "mps": Variant(hint="Give {op} a tensor of a backend it has a kernel for: set PYTORCH_ENABLE_MPS_FALLBACK=1 to "
                       "run it on the CPU, or move this op's inputs to the CPU."),
    },
    doc="""
## What it does
Explains the crash "Could not run 'aten::...' with arguments from the '...' backend" at the
line of your code that made the call: it names the op, the backend whose kernel is missing
(the tensor's layout or device: sparse, quantized, nested, MPS, meta), the tensor, and the
backends the installed torch does have a kernel of that op for, read from its dispatcher.

## Why is this bad?
Every op is a table of kernels, one per backend. Sparse, quantized and nested tensors, and
devices such as MPS, have kernels for only part of the ops; calling another one fails. The
error lists every dispatch key the op is registered for, most of them not backends at all,
which makes it hard to see what would work.

## Example
```python
import torch

scores = torch.randn(4, 4).relu().to_sparse()  # a sparse matrix
flat = scores.view(16)
```

Use instead:
```python
import torch

scores = torch.randn(4, 4).relu().to_sparse()
flat = scores.to_dense().view(16)
```
""",
)
