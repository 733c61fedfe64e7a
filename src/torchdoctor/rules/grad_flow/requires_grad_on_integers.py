"""TD240 requires-grad-on-integers."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD240",
    name="requires-grad-on-integers",
    category=Category.GRAD_FLOW,
    severity=Severity.ERROR,
    proof="run",
    message="`{name}` is a tensor of {dtype}, and autograd tracks only floating-point (and complex) tensors, so it cannot require gradients",
    hint="Make it floating point first (`{name} = {name}.float()`); indices, labels, counts and masks never need gradients.",
    variants={
        "made": Variant(
            message="`{name}` is a tensor of {dtype} (made by `{made}` at line {line}), and autograd tracks only floating-point (and complex) tensors, so it cannot require gradients",
            hint="Make it floating point where it is made (`{made}` with `dtype=torch.float32`, or `{name} = {name}.float()` first); indices, labels, counts and masks never need gradients.",
        ),
        "created": Variant(
            message="`{call}` makes a tensor of integers (its data are whole numbers and no `dtype` is given) and asks for gradients, which autograd gives only to floating-point (and complex) tensors",
            hint="Give a floating-point dtype: `dtype=torch.float32`, or write the data as floats (`[1.0, 2.0]`).",
        ),
    },
    sees={
        "run": "the crash \"only Tensors of floating point and complex dtype can require gradients\" at `x.requires_grad = True`, `x.requires_grad_()`, `nn.Parameter(x)` of an integer tensor `x` (with the line that made it), or a factory given integer data and `requires_grad=True`; at that line",
    },
    doc="""
## What it does
Explains the crash "only Tensors of floating point and complex dtype can require gradients":
names the integer tensor (and the line that made it) behind `x.requires_grad = True`,
`x.requires_grad_()` or `nn.Parameter(x)`, or the factory (`torch.tensor([1, 2, 3],
requires_grad=True)`, `torch.arange(5, requires_grad=True)`) whose data are whole numbers.

## Why is this bad?
A tensor built from whole numbers is `int64` (`torch.arange(10)`, `torch.tensor([1, 2])`,
`torch.from_numpy` of an integer array), and gradients are only defined for floating-point
tensors: on torch 2.13 the line raises, and the message names neither the tensor nor where it
became an integer tensor.

## Example
```python
import torch

weights = torch.tensor([1, 2, 3])
weights.requires_grad = True
loss = (weights * 2.0).sum()
loss.backward()
```

Use instead:
```python
import torch

weights = torch.tensor([1.0, 2.0, 3.0])
weights.requires_grad = True
loss = (weights * 2.0).sum()
loss.backward()
```
""",
)
