"""TD412 saved-tensor-modified-in-place."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD412",
    name="saved-tensor-modified-in-place",
    category=Category.GRAD_FLOW,
    severity=Severity.ERROR,
    proof="run",
    message="the output of {op} (shape {shape}) was changed in place {changes} {times} after the forward pass saved it for backward()",
    hint="Replace the in-place operation applied after {op} with its out-of-place form: `x = x + 1` instead of `x += 1`, `torch.relu(x)` instead of `inplace=True` or `relu_()`, and `x = x.clone()` before assigning into a slice.",
    variants={
        # the output of an op that backward() reads, changed in place later (lint)
        "saved-output": Variant(message='`{tensor}` is the output of {op} (line {saved_line}), which backward() reads; changing it in place here makes backward() raise "one of the variables needed for gradient computation has been modified by an inplace operation"', hint="Make a new tensor instead: `{tensor} = {tensor} + ...` for `+=`, `{tensor} = {tensor}.masked_fill(...)` for `masked_fill_`, or `{tensor} = {tensor}.clone()` before assigning into a slice; no `inplace=True` after it."),
        # the same, by an in-place dropout
        "dropout-on-saved-output": Variant(message='`{tensor}` is the output of {op} (line {saved_line}), which backward() reads; changing it in place here (an in-place dropout does so in training whenever its p > 0) makes backward() raise "one of the variables needed for gradient computation has been modified by an inplace operation"', hint="Make a new tensor instead: `{tensor} = {tensor} + ...` for `+=`, `{tensor} = {tensor}.masked_fill(...)` for `masked_fill_`, or `{tensor} = {tensor}.clone()` before assigning into a slice; no `inplace=True` after it."),
    },
    sees={
        "lint": "in an nn.Module's method, the output of an op that saves it for backward (relu, sigmoid, tanh, exp, softmax, `nn.ReLU`, ...) changed in place (`+=`, `.mul_()`, `x[...] = ...`) before it is bound again (a warning outside `forward()` or on the method's raw input; not under `no_grad`, nor after gelu/silu/linear/batch norm, which keep their input)",
    },
    doc="""
## What it does
Explains the crash "one of the variables needed for gradient computation has been modified by
an inplace operation", naming the forward operation whose output was changed (from PyTorch's
message: "which is output 0 of Sigmoid"). It is reported at the `backward()` call; the line
to change is the in-place operation that follows that forward operation.

`torchdoctor lint` finds it before running, inside the methods of an nn.Module: a name bound to
the output of an op that saves its output (`torch.relu`, `F.relu`, `x.relu()`, sigmoid, tanh,
exp, expm1, sqrt, rsqrt, reciprocal, softmax, log_softmax, softmin, the layers `nn.ReLU`,
`nn.Sigmoid`, `nn.Tanh`, `nn.Softmax`, `nn.LogSoftmax`, `nn.Softmin`, and elu/selu/celu/
leaky_relu/rrelu built with `inplace=True`), then changed in place before it is bound again.
Ops that save their input instead (gelu, silu, elu, hardtanh, dropout, linear layers,
matrix products, batch norm) are left alone: changing their output in place is safe. It is an
error in `forward()`; a warning where the op's input is the method's own argument (data that
may need no gradient), in other methods (sampling code that often runs under `no_grad`), and
for an in-place dropout (`nn.Dropout(p, inplace=True)`), which changes its input only when
p > 0 in training. Nothing is reported under `torch.no_grad()`, nor in an
`autograd.Function`'s `forward` (it runs without autograd).

## Why is this bad?
Many operations save their output or input for the backward pass (sigmoid, tanh, exp, relu,
matrix products). Changing that tensor in place afterwards (`+=`, `*=`, `x[...] = ...`,
`inplace=True`, `relu_()`) makes the saved value wrong, so backward() refuses to run.

## Example
```python
import torch
from torch import nn

layer = nn.Linear(8, 8)
h = torch.sigmoid(layer(torch.randn(4, 8)))
h += 1
h.sum().backward()
```

Use instead:
```python
import torch
from torch import nn

layer = nn.Linear(8, 8)
h = torch.sigmoid(layer(torch.randn(4, 8)))
h = h + 1
h.sum().backward()
```
""",
)
