"""TD163 per-sample-loop."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD163",
    name="per-sample-loop",
    category=Category.PERFORMANCE,
    severity=Severity.INFO,
    proof="lint",
    message="forward() loops over the samples of `{batch}` in Python (`{batch}[{index}]`): one small kernel launch per sample instead of one batched operation",
    hint="Express the per-sample computation on the whole batch (broadcasting, `torch.gather`, `torch.bmm`, `torch.vmap`).",
    variants={
        # a module called once per sample of a batch (run)
        "module-per-sample": Variant(message="`{module}` is called {calls} times per step, once per sample of the same batch of {batch_size}: one small launch per sample instead of one batched call", hint="Call `{module}` once on the whole batch (modules take a batch dimension), or use `torch.vmap` for a per-sample function."),
    },
    sees={
        "lint": "`for i in range(x.size(0)): ... x[i]` in `forward`",
        "run": "a module called once per sample, on slices of one batch tensor; reported at the call in the loop",
    },
    doc="""
## What it does
Flags a `for` loop in an nn.Module's `forward` that runs over the batch dimension of an input
(`for i in range(x.size(0))` or `range(x.shape[0])`) and indexes the input
with the loop variable.

## Why is this bad?
Each iteration launches separate small kernels, so the cost grows with the batch size instead
of staying nearly flat: on a GPU such a loop is often the slowest part of the step, and the
graph it records for backward is as long as the batch. Batched tensor operations do the same
work in one launch.

## Example
```python
import torch
from torch import nn

class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(8))

    def forward(self, x):
        out = []
        for i in range(x.size(0)):
            out.append(x[i] * self.gain)
        return torch.stack(out)
```

Use instead:
```python
import torch
from torch import nn

class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(8))

    def forward(self, x):
        return x * self.gain
```
""",
)
