"""TD563 item-of-non-scalar."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD563",
    name="item-of-non-scalar",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="`{call}` needs a tensor of one value, but `{expr}` has {count} values",
    hint="Reduce it first: `.sum().item()` to count (correct predictions), `.mean().item()` to average; `.tolist()` to read all of its values.",
    variants={
        # `.item()` of an empty tensor
        "empty": Variant(
            message="`{call}` needs a tensor of one value, but `{expr}` is empty",
            hint="An empty batch, or a mask or index that selects nothing: check `{expr}.numel()` before reading it.",
        ),
    },
    sees={
        "run": "the crashes \"a Tensor with 64 elements cannot be converted to Scalar\" (`.item()`) and \"only one element tensors can be converted to Python scalars\" (`float(t)`), naming the expression and its number of values",
    },
    doc="""
## What it does
Explains the crashes "a Tensor with 64 elements cannot be converted to Scalar" of `.item()`,
and "only one element tensors can be converted to Python scalars" of `float(t)` / `int(t)`,
by naming the expression on the line and how many values it holds.

## Why is this bad?
`.item()` reads the one value of a tensor. Called on a per-sample result (the comparison of
predictions with labels, an unreduced loss) it has no single value to return. The usual fix is
the reduction that was meant: `.sum()` for a count of correct predictions, `.mean()` for an
average.

## Example
```python
import torch

logits = torch.randn(16, 10)
labels = torch.randint(0, 10, (16,))
correct = (logits.argmax(1) == labels).item()
```

Use instead:
```python
import torch

logits = torch.randn(16, 10)
labels = torch.randint(0, 10, (16,))
correct = (logits.argmax(1) == labels).sum().item()
```
""",
)
