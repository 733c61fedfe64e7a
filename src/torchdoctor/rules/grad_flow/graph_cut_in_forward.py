"""TD121 graph-cut-in-forward."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD121",
    name="graph-cut-in-forward",
    category=Category.GRAD_FLOW,
    severity=Severity.WARNING,
    proof="lint",
    message="`{call}` in forward() cuts the autograd graph: nothing before it receives a gradient through this path",
    hint="Keep the computation in torch on the same tensor (no `.item()`, `.numpy()`, `.data`, `torch.tensor(t)`); use `.detach()` only where you mean to stop gradients.",
    variants={
        # forward() returns a detached output: the whole module is cut off
        "detached-output": Variant(message="forward() returns `{call}`: the whole output is cut from the autograd graph, so no layer of this module receives a gradient"),
    },
    sees={
        "lint": "`torch.tensor(h.numpy())`, `h.data`, `h = h.detach()`, `return out.detach()` on activations in `forward`",
    },
    doc="""
## What it does
Flags, inside an `nn.Module.forward`, operations that leave autograd on a value that the
method goes on to use: `.item()`, `.tolist()`, `.numpy()`, `.data`, `.detach()`, and
`torch.tensor(<tensor>)` / `torch.as_tensor` re-wrapping.

## Why is this bad?
The result carries no gradient history, so every layer that produced the value gets no
gradient through this path. When it is the only path, those layers never train, and
the only symptom is a loss that stops improving. (A deliberate stop-gradient, such as a
target network or an EMA teacher, is fine: that is why this is a warning, and `.detach()`
of a value that only feeds logging is not flagged, nor are values that carry no gradient
anyway: sizes, indices (`argmax`, `.max(1)[1]`), integer tensors (`torch.tensor(counts,
dtype=torch.int64)`, `torch.tensor(lengths).long()`), what a helper returning a tuple gives
beside its activations (`feats, lengths = upsample(feats, durations)`), `h.data.new(...)`,
an in-place `h.data.masked_fill_(...)`, a `.data` put in a logging dict.)

## Example
```python
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        h = self.body(x)
        h = torch.tensor(h.numpy())
        return self.head(h)
```

Use instead:
```python
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        h = self.body(x)
        return self.head(h)
```
""",
)
