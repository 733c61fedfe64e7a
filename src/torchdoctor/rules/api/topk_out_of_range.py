"""TD573 topk-out-of-range."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD573",
    name="topk-out-of-range",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="`{call}` asks for the {k} largest values along dimension {dim} of `{name}` (shape {shape}), which has only {size}",
    hint="Ask for at most {size} (`min(k, {name}.size({dim}))`); a top-5 accuracy of a model with fewer than 5 classes has no meaning: report top-1 only, or cap k at the number of classes.",
    sees={
        "run": "the crash \"selected index k out of range\" of `x.topk(k, dim)` or `torch.topk(x, k, dim)` on the user's line, when `x` is a variable and `k` a number or a variable: k, the dimension and its size; at that line",
    },
    doc="""
## What it does
Explains the crash "selected index k out of range" of `topk`: names the tensor on the user's
line, the `k` asked for, the dimension and how many values that dimension has.

## Why is this bad?
`topk` cannot return more values than the dimension holds, and torch 2.13's message names
neither. The usual cause is a top-k accuracy helper copied from an ImageNet script
(`topk=(1, 5)`) and used on a model with fewer than 5 classes, or a `k` meant for another
dimension.

## Example
```python
import torch

logits = torch.randn(16, 3)
_, top5 = logits.topk(5, dim=1)
```

Use instead:
```python
import torch

logits = torch.randn(16, 3)
_, top = logits.topk(min(5, logits.size(1)), dim=1)
```
""",
)
