"""TD569 tensor-truth-ambiguous."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD569",
    name="tensor-truth-ambiguous",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="`{test}` is a tensor of {count} values (`{tensor}` has shape {shape}), and {construct} needs one True or False",
    hint="Say which you mean: `({test}).any()` or `({test}).all()`; compare one number (`{tensor}.mean()`, `{tensor}.item()` of a single value); or, to choose element by element, `torch.where({test}, a, b)`.",
    sees={
        "run": "the crash \"Boolean value of Tensor with more than one value is ambiguous\" at an `if`/`while`/`assert`/`and`/`or`/`not` whose condition is a variable holding several values, or compares one; at that line",
    },
    doc="""
## What it does
Explains the crash "Boolean value of Tensor with more than one value is ambiguous": names the
condition of the user's `if`, `while`, `assert`, `and`, `or` or `not` and the tensor of several
values in it (a variable, or a variable compared with something: `if scores > best:`).

## Why is this bad?
Python asks a condition for one truth value; a tensor of several values has one per element,
and torch refuses to pick (on torch 2.13, `bool(torch.randn(8) > 0.5)` raises the error
above). The usual cause is a value meant to be one number (a loss, an accuracy) that is still
per-sample, or a comparison meant element by element.

## Example
```python
import torch

scores = torch.randn(8)
best = 0.5
if scores > best:
    print("better")
```

Use instead:
```python
import torch

scores = torch.randn(8)
best = 0.5
if scores.mean() > best:
    print("better")
```
""",
)
