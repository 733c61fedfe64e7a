"""TD120 parameter-without-gradient."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD120",
    name="parameter-without-gradient",
    category=Category.GRAD_FLOW,
    severity=Severity.ERROR,
    proof="check",
    message="{count} trainable parameter(s) got no gradient from the loss: {names}",
    hint="Find where the graph is cut between these modules and the loss (`.detach()`, `.item()`, `.numpy()`, `.data`, `torch.tensor(...)`), or freeze them on purpose with `requires_grad_(False)`.",
    variants={
        # check: the objective it backpropagated, and the cause it found
        "no-gradient": Variant(message="{count} trainable parameter(s) got no gradient from {objective}: {names}; {cause}"),
        # check: gradients that are exactly zero
        "all-zero": Variant(message="{count} trainable parameter(s) got an all-zero gradient: {names}; their gradient is exactly zero (a dead ReLU, a multiplication by zero, a comparison or integer cast in between)"),
        # run saw the call that cut the graph
        "cut": Variant(message="{count} trainable parameter(s) got no gradient from the loss: {names}; `{call}` on this line cuts the graph between them and the loss"),
        # their module never ran
        "never-ran": Variant(message="{count} trainable parameter(s) got no gradient: {names}; their module never ran in the forward pass"),
    },
    sees={
        "run": "trainable parameters given to an optimizer that never get a gradient, at the line that cuts the graph (`.detach()`, `.item()`, `.numpy()`, `.data`, `torch.tensor(t)`) when it is in your code; a layer that never runs is a warning",
    },
    doc="""
## What it does
After one forward and backward pass, flags every trainable parameter (`requires_grad=True`)
whose `.grad` is still `None` or all zeros, and names its module. Parameters frozen on
purpose (`requires_grad=False`) are not reported.

## Why is this bad?
A parameter without a gradient never learns. The usual causes are a graph cut inside
`forward` (`.detach()`, `.item()`, `.numpy()`, `.data`, re-wrapping with `torch.tensor`),
a layer built but never used, or a branch whose output does not reach the loss. The loss
may still go down a little, thanks to the other layers, so nothing looks broken.

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
        h = torch.relu(self.body(x)).detach()
        return self.head(h)

def make():
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": Net(), "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
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
        h = torch.relu(self.body(x))
        return self.head(h)

def make():
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": Net(), "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```
""",
)
