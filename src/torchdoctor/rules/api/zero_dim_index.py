"""TD179 zero-dim-index."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD179",
    name="zero-dim-index",
    category=Category.API,
    severity=Severity.ERROR,
    proof="lint",
    fixable=True,
    message="`{expression}` indexes a 0-dim tensor ({why}): torch raises \"invalid index of a 0-dim tensor\"",
    hint="Read the number with `{fixed}`.",
    sees={
        "lint": "`loss.data[0]`, `criterion(out, y)[0]`, `x.sum().data[0]`: `[0]` on a reduced loss, a full reduction, or a value `backward()` is called on without a gradient, which raises on torch 0.4 and later (`reduction='none'`, `reduce=False`, reductions over a dimension and tensors made with a size are left alone)",
        "run": "the crash \"invalid index of a 0-dim tensor\" at a subscript on the user's line of a variable or attribute that holds a 0-dim tensor (`loss.data[0]`); at that line",
    },
    doc="""
## What it does
Flags `[0]` on a value that is a single number held in a 0-dim tensor: a reduced loss
(`loss.data[0]`, `criterion(out, y)[0]`) or a full reduction (`pred.eq(y).sum().data[0]`).

## Why is this bad?
Since torch 0.4 losses and full reductions are 0-dim tensors, which have no index: the line
raises `IndexError: invalid index of a 0-dim tensor. Use tensor.item() ...` (verified on torch
2.13). It is the most common line of code written for torch before 0.4 that fails today, and
it usually sits in the logging of the training loop, so the crash comes after the first step.

## Example
```python
import torch
from torch import nn


def train(model, loader, optimizer):
    criterion = nn.CrossEntropyLoss()
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(loss.data[0])
```

Use instead:
```python
import torch
from torch import nn


def train(model, loader, optimizer):
    criterion = nn.CrossEntropyLoss()
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(loss.item())
```

## Fix safety
The fix replaces `X.data[0]` (or `X[0]`) with `X.item()`, which returns the same Python number
the line returned on torch before 0.4.
""",
)
