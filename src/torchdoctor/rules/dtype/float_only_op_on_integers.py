"""TD220 float-only-op-on-integers."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

_MASK_HINT = "Invert a mask with `~{expr}` (or `{expr}.logical_not()`); for arithmetic such as `1 - {expr}`, make it a number first: `1 - {expr}.float()`."

RULE = Rule(
    code="TD220",
    name="float-only-op-on-integers",
    category=Category.DTYPE,
    severity=Severity.ERROR,
    proof="run",
    message="`{expr}` is a tensor of {dtype}, and `{op}()` works only on floating-point (and complex) tensors: the result of an average has no {dtype} to be",
    hint="Make it floating point first: `{expr}.float().{op}()` (an accuracy is `(pred == target).float().mean()`).",
    variants={
        "made": Variant(
            message="`{expr}` is a tensor of {dtype} (made by `{made}` at line {line}), and `{op}()` works only on floating-point (and complex) tensors: the result of an average has no {dtype} to be",
            hint="Make it floating point first: `{expr}.float().{op}()` (an accuracy is `(pred == target).float().mean()`).",
        ),
        "bool-minus": Variant(
            message="`{expr}` is a bool tensor (a mask), and torch refuses the `-` operator on bools",
            hint=_MASK_HINT,
        ),
        "bool-minus-made": Variant(
            message="`{expr}` is a bool tensor (a mask, made by `{made}` at line {line}), and torch refuses the `-` operator on bools",
            hint=_MASK_HINT,
        ),
    },
    sees={
        "run": "the crashes \"mean(): could not infer output dtype ... Got: Bool\" (or Long, ...), \"std and var only support floating point and complex dtypes\", and \"Subtraction, the `-` operator, with a bool tensor is not supported\" (and negation): the operand on the user's line, its dtype and the line that made it; at that line",
    },
    doc="""
## What it does
Explains three crashes of a bool or integer tensor given to an op that needs numbers with a
fraction or a sign: `mean()` ("mean(): could not infer output dtype. Input dtype must be either a
floating point or complex dtype. Got: Bool"), `std()`/`var()` ("std and var only support floating
point and complex dtypes"), and `-` on a mask ("Subtraction, the `-` operator, with a bool tensor
is not supported"). It names the operand on the user's line, its dtype and, when the function
shows it, the line that made it.

## Why is this bad?
Comparisons give bool tensors and labels are integers, so an accuracy written as
`(pred == y).mean()` or a discount written as `1 - done` with `done` a bool tensor crashes on
torch 2.13 (older releases allowed some of these and gave integer results, which is why the code
looks right to its author). The operand is usually made a few lines above the crash.

## Example
```python
import torch

logits = torch.randn(8, 3)
labels = torch.randint(0, 3, (8,))
correct = logits.argmax(dim=1) == labels
accuracy = correct.mean()
```

Use instead:
```python
import torch

logits = torch.randn(8, 3)
labels = torch.randint(0, 3, (8,))
correct = logits.argmax(dim=1) == labels
accuracy = correct.float().mean()
```
""",
)
