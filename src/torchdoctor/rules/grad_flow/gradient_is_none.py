"""TD433 gradient-is-none."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD433",
    name="gradient-is-none",
    category=Category.GRAD_FLOW,
    severity=Severity.ERROR,
    proof="run",
    message="`{tensor}.grad` is None at this line{why}: a gradient exists only after a backward() that reaches the tensor, and `zero_grad()` sets it back to None",
    hint="Call `loss.backward()` before reading `.grad`, and reset gradients before the backward(), not between it and the update; a parameter the loss does not reach keeps `.grad = None`: skip it (`if p.grad is not None:`).",
    variants={
        # a hand-written update that rebinds the name to its result
        "rebound": Variant(
            message="`{tensor}.grad` is None at this line: `{tensor}` is no longer the leaf tensor you created, line {line} rebound it to `{made}`, the result of an op, and autograd fills `.grad` only of leaf tensors",
            hint="Update the tensor in place so that it stays a leaf: `with torch.no_grad(): {tensor} -= lr * {tensor}.grad`, then `{tensor}.grad.zero_()` (or use an optimizer).",
        ),
        # a tensor made by an op on a leaf (a scale, a cast, a move to the GPU)
        "not-a-leaf": Variant(
            message="`{tensor}.grad` is None at this line: `{tensor}` is made by `{made}` (line {line}), the result of an op on the tensor that requires grad, and autograd fills `.grad` only of leaf tensors",
            hint="Make `{tensor}` itself the leaf: build the value first, then ask for gradients (`{tensor} = (...).detach().requires_grad_()`, e.g. `(torch.randn(3) * 0.01).requires_grad_()`, or `.to(device)` before `requires_grad_()`).",
        ),
    },
    doc="""
## What it does
Explains a `TypeError` or `AttributeError` about `NoneType` raised at a line of your code that
reads `.grad` (a hand-written update `p.data.add_(-lr * p.grad)`, `w.grad.zero_()`, a gradient
norm), when the tensor's `.grad` is indeed None: it names the tensor and says whether it
requires grad at all.

## Why is this bad?
The raw error (`unsupported operand type(s) for *: 'float' and 'NoneType'`, `'NoneType' object
has no attribute 'zero_'`) says nothing about gradients. `.grad` is None until a backward()
reaches the tensor: the backward() is missing or runs later, `zero_grad()` (which sets
gradients to None by default) runs between the backward() and the update, the tensor does not
require grad, or the loss does not depend on it.

## Example
```python
import torch

w = torch.randn(3, requires_grad=True)
x, y = torch.randn(8, 3), torch.randn(8)
loss = ((x @ w - y) ** 2).mean()
with torch.no_grad():
    w -= 0.1 * w.grad
```

Use instead:
```python
import torch

w = torch.randn(3, requires_grad=True)
x, y = torch.randn(8, 3), torch.randn(8)
loss = ((x @ w - y) ** 2).mean()
loss.backward()
with torch.no_grad():
    w -= 0.1 * w.grad
```
""",
)
