"""TD568 tensor-shapes-mismatch."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD568",
    name="tensor-shapes-mismatch",
    category=Category.API,
    severity=Severity.ERROR,
    proof="run",
    message="`{left}` of shape {left_shape} and `{right}` of shape {right_shape} cannot be broadcast together: {a} against {b} in dimension {dim} of the result",
    hint="Make the shapes agree before this line: add a missing dimension with `.unsqueeze(...)`, put dimensions in order with `.transpose`/`.permute`, or drop a size-1 one with `.squeeze(...)` (an (N, 1) against an (N,) tensor is the usual case).",
    variants={
        "matrix-product": Variant(
            message="`{left} * {right}` multiplies element by element, and shapes {left_shape} and {right_shape} cannot be broadcast together; they fit a matrix product",
            hint="For a matrix product write `{left} @ {right}` (or `torch.matmul`); `*` multiplies matching elements.",
        ),
        "one-side": Variant(
            message="`{known}` has {size} values but `{other}` has {other_size}: an element-by-element operation needs them equal (or one of them 1)",
            hint="`+` (and `+=`) on tensors adds element by element: to append one to the other, join them with `torch.cat(...)` and assign the result; otherwise make both the same length before this line.",
        ),
        "cat": Variant(
            message="`{call}` joins tensors along dimension {dim}, and every other dimension must match: `{first}` is {first_shape}, `{other}` is {other_shape}",
            hint="Make `{other}` match `{first}` outside dimension {dim} (reshape, transpose or crop it), or join along the dimension where they differ.",
        ),
        "cat-dims": Variant(
            message="`{call}` joins tensors of different numbers of dimensions: `{first}` is {first_shape}, `{other}` is {other_shape}",
            hint="Give them the same number of dimensions first: add the missing one to the smaller (`.unsqueeze(...)`, e.g. a vector of N values joined to an (N, k) table becomes (N, 1) with `.unsqueeze(1)`), or drop a size-1 one from the larger (`.squeeze(...)`).",
        ),
    },
    sees={
        "run": "the crashes \"The size of tensor a (3) must match the size of tensor b (5) at non-singleton dimension 1\" of an arithmetic operator or a `masked_fill`, \"Sizes of tensors must match except in dimension 1\" and \"Tensors must have same number of dimensions: got 2 and 1\" of `torch.cat`, when the operands on the user's line are variables (or attributes): their names and shapes (for 1-D tensors, one readable operand is enough: the other, a call or a slice, has the size the message gives); at that line",
    },
    doc="""
## What it does
Explains the crashes "The size of tensor a (3) must match the size of tensor b (5) at
non-singleton dimension 1" of `a + b`, `a * b`, `a -= b` and the others (and of
`x.masked_fill(mask, value)`), and "Sizes of tensors
must match except in dimension 1. Expected size 4 but got size 5 for tensor number 1 in the
list." and "Tensors must have same number of dimensions: got 2 and 1" of `torch.cat`, by
naming the operands of the user's line and their shapes. It reads only operands that are variables or attributes (`x`, `self.bias`), and says nothing when the
line has several candidates or none.

## Why is this bad?
torch's message says "tensor a" and "tensor b" and counts dimensions from the result's
right-aligned shape: on a line with several operations the reader has to find which two
tensors, and which of their dimensions, disagree.

## Example
```python
import torch

features = torch.randn(4, 3)
weights = torch.randn(4, 5)
scores = features * weights
```

Use instead:
```python
import torch

features = torch.randn(4, 3)
weights = torch.randn(4, 3)
scores = features * weights
```
""",
)
