"""TD159 layer-created-in-forward."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD159",
    name="layer-created-in-forward",
    category=Category.GRAD_FLOW,
    severity=Severity.ERROR,
    proof="lint",
    message="`nn.{layer}` is built inside forward(): every call gets a new layer with fresh random weights that no optimizer updates",
    hint="Create the layer once in `__init__` (`self.head = nn.{layer}(...)`) and call it in forward().",
    sees={
        "lint": "`nn.Linear(...)` built inside `forward` (new random weights every call)",
    },
    doc="""
## What it does
Flags a layer that owns weights (`nn.Linear`, `nn.Conv2d`, `nn.BatchNorm2d`, `nn.LSTM`,
`nn.Embedding`, ...) constructed inside `forward` and not stored on the module.

## Why is this bad?
The layer is created again at every call, with new random weights. It is not a registered
submodule, so the optimizer never sees its parameters, `model.to(device)` does not move it
(on a GPU: "Expected all tensors to be on the same device"), and `state_dict()` does not
save it. The model's output is noise that changes from call to call, and the loss never
goes down. (Layers stored on `self` on first use, the lazy pattern, are not flagged.)

## Example
```python
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)

    def forward(self, x):
        head = nn.Linear(16, 3)
        return head(self.body(x))
```

Use instead:
```python
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.body(x))
```
""",
)
