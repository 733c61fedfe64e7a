"""TD579 own-check-failed."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD579",
    name="own-check-failed",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="the assertion `{test}` is false here: {values}",
    hint="Decide which is wrong, the values or the check: follow the value that is off back to where it was made, or fix the condition if it states the rule backwards.",
    variants={
        "raised": Variant(
            message="the check `{test}` raised {error} here: {values}",
            hint="Follow the value that is off back to where it was made (a slice, a size computed elsewhere), or fix the condition if it is the one that is wrong.",
        ),
    },
    sees={
        "run": "an AssertionError of an `assert` on the user's line, or an exception raised by a `raise` right under an `if` there, with the values of the variables and attribute chains its test reads (a tensor by its shape); at the line",
    },
    doc="""
## What it does
Explains a check of your own that stopped the run, an `assert` or a `raise` under an `if`, by
the values its test read when it failed: `the assertion `filter_length >= win_length` is false
here: `filter_length` = 800, `win_length` = 1024`. Tensors are shown by their shape.

## Why is this bad?
A bare `AssertionError` says nothing about the values, and the message of a `raise` is written
before anyone knows which value will be off. The values decide whether the data is wrong or the
check is (a condition written backwards is a real bug of its own).

## Example
```python
import torch

frames = torch.randn(4, 100)
window = 256
hop = 512
assert window >= hop, "the window must cover the hop"
```

Use instead:
```python
import torch

frames = torch.randn(4, 100)
window = 512
hop = 256
assert window >= hop, "the window must cover the hop"
```
""",
)
