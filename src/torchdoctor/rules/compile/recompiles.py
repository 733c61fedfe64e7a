"""TD481 compile-recompiles."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD481",
    name="compile-recompiles",
    category=Category.COMPILE,
    severity=Severity.WARNING,
    proof="run",
    message="torch.compile compiled `{function}` {count} times: {why}{limit}",
    hint="{remedy}",
    doc="""
## What it does
Reports a compiled function (or a compiled model's `forward`) that dynamo compiled again and
again because a guard failed, with the guard in plain words: a shape that changes between
calls, a Python number or string that is different every call, an input whose
`requires_grad` flips. One recompilation after the first call is normal (dynamo then marks
a changing shape dynamic by itself) and is not reported; two or more of the same function
are, and so is reaching dynamo's recompile limit, after which the function silently runs
without compilation.

## Why is this bad?
Every recompilation costs seconds to minutes, and once the limit (8 by default) is reached
the function falls back to eager mode for the rest of the run: the speed-up is gone and
nothing but a log line says so.

## Example
```python
import torch


@torch.compile
def scale(x, mode):
    return x * len(mode)


for step in range(10):
    scale(torch.randn(4), "warmup" + "!" * step)  # a different string every call
```

Use instead:
```python
import torch


@torch.compile
def scale(x, factor):
    return x * factor


for step in range(10):
    scale(torch.randn(4), torch.tensor(float(6 + step)))  # a tensor: no recompilation
```
""",
)
