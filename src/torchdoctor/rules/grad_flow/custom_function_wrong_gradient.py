"""TD311 custom-function-wrong-gradient."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD311",
    name="custom-function-wrong-gradient",
    category=Category.GRAD_FLOW,
    severity=Severity.WARNING,
    proof="check",
    message="{function}.backward() does not match the derivative of its forward(): gradcheck on a float64 copy of its inputs fails ({detail})",
    hint="Derive backward() again (or compare it with the gradient autograd computes for the same forward in plain torch ops). If it is a deliberate surrogate gradient, such as a straight-through estimator, ignore this.",
    doc="""
## What it does
Finds the custom `torch.autograd.Function`s the model calls, and runs
`torch.autograd.gradcheck` on each, with the inputs it received in the checked forward pass
(a slice of them, in float64), comparing its `backward()` with finite differences.

## Why is this bad?
A hand-written `backward()` with a wrong formula raises nothing: training runs on wrong
gradients and converges slowly, to the wrong place, or not at all. Straight-through estimators
and other deliberate surrogate gradients fail gradcheck by design, which is why this is a
warning.

## Example
```python
import torch
from torch import nn

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * x  # should be 2 * x

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(Square.apply(x))

def make():
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": Net(), "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```

Use instead:
```python
import torch
from torch import nn

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(Square.apply(x))

def make():
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": Net(), "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```

## References
- [Extending torch.autograd](https://pytorch.org/docs/stable/notes/extending.html#extending-torch-autograd) and [`torch.autograd.gradcheck`](https://pytorch.org/docs/stable/generated/torch.autograd.gradcheck.gradcheck.html)
""",
)
