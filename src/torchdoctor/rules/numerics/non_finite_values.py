"""TD145 non-finite-values."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD145",
    name="non-finite-values",
    category=Category.NUMERICS,
    severity=Severity.ERROR,
    proof="check",
    message="{what} contains NaN or Inf, first produced by {origin}",
    hint="Look at the named op's inputs: typical causes are log(0), division by zero, sqrt of a negative, exp overflow, or a learning rate that is too high.",
    variants={
        # the op whose backward made it, found by replaying the step; the hint is the cause's fix (nan_origin.py)
        "backward-of-op": Variant(message="{what} contain NaN or Inf, first produced by the backward of `{op}` on this line: {cause}"),
        # the forward op that made it, found by replaying the step
        "op": Variant(message="{what} contains NaN or Inf, first produced by `{op}` on this line: {cause}"),
        # an op whose gradient is infinite on the values it was given (singular.py), by its divisor
        "singular-divisor": Variant(message="{what} contain NaN or Inf, first produced by the backward of `{op}` on this line: its divisor holds {value} ({operand}), and {effect}"),
        # ...by its input
        "singular-input": Variant(message="{what} contain NaN or Inf, first produced by the backward of `{op}` on this line: its input holds {value} ({operand}), and {effect}"),
        # ...in the forward of a custom autograd.Function, by its divisor or its input
        "singular-divisor-in-function": Variant(message="{what} contain NaN or Inf, first produced by the backward of `{op}` in the forward of the custom autograd.Function `{function}`, whose backward computes this gradient, on this line: its divisor holds {value} ({operand}), and {effect}"),
        "singular-input-in-function": Variant(message="{what} contain NaN or Inf, first produced by the backward of `{op}` in the forward of the custom autograd.Function `{function}`, whose backward computes this gradient, on this line: its input holds {value} ({operand}), and {effect}"),
        # the parameters an earlier step filled with NaN/Inf (run)
        "poisoned-parameters": Variant(message="{what} contains NaN or Inf, first produced by the parameters {parameters}, which an earlier optimizer step filled with NaN/Inf (the loss before it was finite: its gradients were not)", hint="Clip the gradients (`torch.nn.utils.clip_grad_norm_`), lower the learning rate, and guard ops whose gradient is infinite at 0 (`sqrt`, `norm`, `pow` with exponent < 1) with an epsilon."),
        # a model that could not be replayed to find the op
        "not-replayed": Variant(message="{what} contains NaN or Inf, first produced by the loss computation (the model could not be replayed to find the op)"),
        # the input batch already holds NaN/Inf
        "bad-batch": Variant(message="the model's input batch contains NaN or Inf, first produced by the data: the batch already contains NaN/Inf", hint="Check the dataset and its transforms for NaN/Inf (missing values, division by a zero std, log of 0) and filter or impute them."),
        # the same, at the line that passed it
        "bad-batch-at": Variant(message="the model's input batch contains NaN or Inf, first produced by the data: the batch passed at {place} already contains NaN/Inf", hint="Check the dataset and its transforms for NaN/Inf (missing values, division by a zero std, log of 0) and filter or impute them."),
        # a finite model output and a loss that is not
        "loss-computation": Variant(message="{what} contains NaN or Inf, first produced by the loss computation: the model's output is finite, the loss computed from it before this backward() is not", hint="Look at the loss code for log(0), division by zero or sqrt of a negative; clamp probabilities (`p.clamp_min(1e-7)`) or use the logits versions (`cross_entropy`, `binary_cross_entropy_with_logits`)."),
        # gradients NaN/Inf before the step, the forward replayed without finding the op
        "gradients-replayed": Variant(message="{what} contain NaN or Inf before this optimizer step applies them (the model's forward, replayed, does not make them; the code between its output and the loss is seen in the first steps only)", hint="Guard ops whose gradient is infinite at a point (`sqrt`, `pow` with exponent < 1, `acos`, `log`) with an epsilon, and clip the gradients (`torch.nn.utils.clip_grad_norm_`)."),
        # the same, with no forward to replay
        "gradients-not-replayed": Variant(message="{what} contain NaN or Inf before this optimizer step applies them (no model forward to replay to find the op)", hint="Guard ops whose gradient is infinite at a point (`sqrt`, `pow` with exponent < 1, `acos`, `log`) with an epsilon, and clip the gradients (`torch.nn.utils.clip_grad_norm_`)."),
    },
    sees={
        "run": "the first NaN/Inf: the aten op and line that made it from finite inputs, what its inputs show (`log` of 0, `sqrt` of a negative, `exp` overflow, division by 0, a softmax row of `-inf` with the line of the mask, float16 past 65504) and the fix; gradients that are not finite are caught before `optimizer.step()` applies them and named by the forward op whose backward made them, in the model or in the code between its output and the loss (or: the data, or an earlier poisoned update, or the loss code)",
    },
    doc="""
## What it does
Flags NaN or infinite values in the inputs, outputs, loss, gradients or parameters, and names
the first module (or op, and its source line) that produced one.

## Why is this bad?
One NaN spreads to every weight after a single optimizer step, and the loss prints `nan`
from then on. By the time you look, the place it came from is long gone; the first producer
(a `log` of zero, a division by a zero norm, an overflow in half precision) is where the fix is.

## Example
```python
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(torch.log(x))

def make():
    x, y = torch.rand(8, 4) - 0.5, torch.arange(8) % 3  # negative inputs
    return {"model": Net(), "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```

Use instead:
```python
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(torch.log(x.clamp_min(1e-6)))

def make():
    x, y = torch.rand(8, 4) - 0.5, torch.arange(8) % 3
    return {"model": Net(), "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}
```
""",
)
