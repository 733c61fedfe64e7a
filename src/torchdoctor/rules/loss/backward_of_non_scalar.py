"""TD320 backward-of-non-scalar."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD320",
    name="backward-of-non-scalar",
    category=Category.LOSS,
    severity=Severity.ERROR,
    proof="run",
    message="`{name}.backward()` needs a single number, but `{name}` has shape {shape} ({count} values)",
    hint="Reduce it to the one value to minimise before backward(): `{name}.mean()` (or `.sum()`); pass `gradient=torch.ones_like({name})` only if you mean the sum of all of its values.",
    variants={
        # the values come from a loss built with reduction='none'
        "reduction-none": Variant(
            message="`{name}.backward()` needs a single number, but `{name}` has shape {shape} ({count} values): `{loss}` is built with reduction='none'",
            hint="Reduce the per-sample losses before backward(): `{name}.mean().backward()` (what the default reduction='mean' does), or weight them first (`(weights * {name}).mean()`).",
        ),
        # backward() called on an expression (`criterion(out, y).backward()`)
        "unnamed": Variant(
            message="`backward()` needs a single number, but the tensor it is called on has shape {shape} ({count} values)",
            hint="Reduce it to the one value to minimise before backward(): `.mean().backward()` (or `.sum()`), e.g. a loss built with its default reduction='mean'.",
        ),
    },
    sees={
        "run": "the crash \"grad can be implicitly created only for scalar outputs\" of `backward()` on a tensor of several values, with its shape and the loss built with reduction='none' when there is one (at the backward line)",
    },
    doc="""
## What it does
Explains the crash "grad can be implicitly created only for scalar outputs" of
`loss.backward()`: it names the tensor, its shape, and the loss built with
`reduction='none'` that made per-sample values, when there is one.

## Why is this bad?
`backward()` without a `gradient` argument differentiates one number. A loss of several values
(per-sample losses from `reduction='none'`, a model's output passed as the loss, a loss summed
over the wrong dimension) has no single gradient, and the message does not say which tensor or
why. Passing `gradient=torch.ones_like(loss)` makes it run, but it backpropagates the sum,
which changes the scale of the update with the batch size.

## Example
```python
import torch
from torch import nn

model = nn.Linear(3, 1)
criterion = nn.MSELoss(reduction="none")
x, y = torch.randn(8, 3), torch.randn(8, 1)
loss = criterion(model(x), y)
loss.backward()
```

Use instead:
```python
import torch
from torch import nn

model = nn.Linear(3, 1)
criterion = nn.MSELoss(reduction="none")
x, y = torch.randn(8, 3), torch.randn(8, 1)
loss = criterion(model(x), y)
loss.mean().backward()
```
""",
)
