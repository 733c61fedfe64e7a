"""TD221 inplace-result-dtype."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

_HINT = "Make a new tensor instead of writing into `{target}`: `{target} = {target} {op} ...` makes a new tensor of {result}; or make `{target}` {result} where it is made."

RULE = Rule(
    code="TD221",
    name="inplace-result-dtype",
    category=Category.DTYPE,
    severity=Severity.ERROR,
    proof="run",
    message="`{statement}` computes {result} values and writes them into `{target}`, a tensor of {dtype}: an in-place op keeps its tensor's dtype, and torch will not round {result} into {dtype}",
    hint=_HINT,
    variants={
        "made": Variant(
            message="`{statement}` computes {result} values and writes them into `{target}`, a tensor of {dtype} (made by `{made}` at line {line}): an in-place op keeps its tensor's dtype, and torch will not round {result} into {dtype}",
            hint=_HINT,
        ),
    },
    sees={
        "run": "the crash \"result type Float can't be cast to the desired output type Long\" of an augmented assignment (`a += b`, `a *= 0.5`, `a /= 2`) or an in-place method (`a.add_(b)`) whose target is a variable holding a tensor of a narrower dtype: the statement, the dtypes and the line that made the target; at that line",
    },
    doc="""
## What it does
Explains the crash "result type Float can't be cast to the desired output type Long" of an
in-place operation: names the statement on the user's line (`counts += weights`, `x /= 2`,
`x.mul_(0.9)`), the tensor written into, its dtype and the dtype of the result, and, when the
function shows it, the line that made the tensor.

## Why is this bad?
`a += b` writes into `a`, so the result must fit `a`'s dtype. A tensor made from whole numbers
(`torch.tensor([1, 2, 3])`, `torch.zeros(n, dtype=torch.long)`, `torch.arange(n)`) is int64,
and adding floats, or dividing it, gives floats that torch refuses to round into it (on
torch 2.13, `torch.tensor([1, 2]) /= 2` raises the error above; `a = a / 2` is fine and makes
a new float tensor).

## Example
```python
import torch

totals = torch.zeros(3, dtype=torch.long)
weights = torch.tensor([0.5, 1.5, 2.0])
totals += weights
```

Use instead:
```python
import torch

totals = torch.zeros(3)
weights = torch.tensor([0.5, 1.5, 2.0])
totals += weights
```
""",
)
