"""TD578 not-a-tensor."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD578",
    name="not-a-tensor",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="`{name}` is {kind} ({value}), not a tensor, where this line asks for its `.{attribute}`",
    hint="Give it a tensor: `torch.as_tensor({name})` for numbers (`torch.full((batch,), {name})` for one value per sample), `torch.stack({name})` for a list of tensors; or check what produced `{name}`.",
    variants={
        "passed": Variant(
            message="this call passes `{argument}`, {kind} ({value}), where `{function}` needs a tensor: it asks for its `.{attribute}` (as `{name}`){crashed}",
            hint="Pass a tensor: `torch.as_tensor({argument})` for a number (`torch.full((batch,), {argument}, device=device)` for one value per sample), `torch.stack({argument})` for a list of tensors.",
        ),
    },
    sees={
        "run": "the crash \"'int' object has no attribute 'shape'\" (int, float, bool, list, tuple or str; an attribute tensors have) when one attribute chain on the user's line holds that type; at the call that passed it in when it is a parameter handed on unchanged, else at the line",
    },
    doc="""
## What it does
Explains the crash "AttributeError: 'int' object has no attribute 'shape'" (or a float, bool,
list, tuple or string asked for `.shape`, `.size`, `.device`, `.to`, ...) when the line wants a
tensor: it names the value. When the value is a parameter handed on unchanged from call to
call, it points at the call where it entered: the line that passed a number where a tensor was
expected (a diffusion step `t` given as one int instead of a tensor of steps per sample).

## Why is this bad?
Python's message names only the type, and the line it points at is deep inside a helper; the
line to change is the caller's, often several calls up.

## Example
```python
import torch


def extract(table, t, shape):
    batch = t.shape[0]
    return table.gather(-1, t).reshape(batch, *((1,) * (len(shape) - 1)))


def noised(x, t):
    return x * extract(torch.linspace(0.9, 0.1, 10), t, x.shape)


print(noised(torch.randn(4, 3, 8, 8), 5).shape)
```

Use instead:
```python
import torch


def extract(table, t, shape):
    batch = t.shape[0]
    return table.gather(-1, t).reshape(batch, *((1,) * (len(shape) - 1)))


def noised(x, t):
    return x * extract(torch.linspace(0.9, 0.1, 10), t, x.shape)


print(noised(torch.randn(4, 3, 8, 8), torch.full((4,), 5)).shape)
```
""",
)
