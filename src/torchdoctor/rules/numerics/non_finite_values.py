"""TD145 non-finite-values."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

#: what the inputs of the op that made the first NaN/Inf show (observe/nan_origin.py `cause_of`), by
#: cause, after "first produced by `{op}` on this line: "; filled with the op, its inputs' ranges, counts
#: and limits
CAUSES = {
    "log-of-negative": "`{op}` of {negatives} negative number(s) gives NaN (input {input})",
    "log-of-zero": "`{op}` of 0 gives -inf ({zeros} zero(s) in the input {input})",
    "root-of-negative": "`{op}` of {negatives} negative number(s) gives NaN (input {input})",
    "root-of-zero": "`{op}` of 0 gives inf ({zeros} zero(s) in the input {input})",
    "division-by-zero": "a division by 0 (the divisor {divisor} has {zeros} zero(s))",
    # a number (not a tensor) as the divisor
    "division-by-zero-number": "a division by 0 (the divisor is {divisor})",
    "exp-overflow": "`{op}` overflows {dtype} above {limit:.1f} (input {input})",
    "exp-overflow-no-dtype": "`{op}` overflows its dtype above {limit:.1f} (input {input})",
    "out-of-domain": "`{op}` is defined on {domain} only (input {input})",
    "pow-of-negative": "`pow` of {negatives} negative base(s) to a fractional exponent gives NaN (base {input})",
    "masked-row": "`{op}` over {rows} row(s) that are entirely -inf (a fully masked row) gives NaN",
    # the -inf of the mask was put in on the line the finding points at, by the op `{source}`
    "masked-row-put-in": "`{op}` over {rows} row(s) that are entirely -inf (a fully masked row, put in on this line by "
    "`{source}`) gives NaN",
    "half-overflow": "`{op}` overflows {dtype} (largest finite value {largest:g}; inputs {ranges})",
    "large-inputs": "`{op}` overflows {dtype}: its inputs reach {largest:.3g} ({ranges})",
    "large-inputs-no-dtype": "`{op}` overflows its dtype: its inputs reach {largest:.3g} ({ranges})",
    "finite-inputs": "`{op}`: its inputs are finite ({ranges}), its output is not",
}
#: the same in the backward of the forward op `{op}`: `{aten}` made it, from inputs {ranges}; by the
#: forward op whose gradient is infinite at a point ("gradient-<op>"), or any other
GRADIENT_CAUSES = {
    "gradient-sqrt": "the gradient of `sqrt` is infinite at 0 (`{aten}` in its backward, inputs {ranges})",
    "gradient-rsqrt": "the gradient of `rsqrt` is infinite at 0 (`{aten}` in its backward, inputs {ranges})",
    "gradient-pow": "the gradient of `pow` with an exponent below 1 is infinite at 0 (`{aten}` in its backward, inputs {ranges})",
    "gradient-log": "the gradient of `log` is infinite at 0 (`{aten}` in its backward, inputs {ranges})",
    "gradient-acos": "the gradient of `acos` is infinite at -1 and 1 (`{aten}` in its backward, inputs {ranges})",
    "gradient-asin": "the gradient of `asin` is infinite at -1 and 1 (`{aten}` in its backward, inputs {ranges})",
    "gradient-atanh": "the gradient of `atanh` is infinite at -1 and 1 (`{aten}` in its backward, inputs {ranges})",
    "gradient-div": "the gradient of a division by a number near 0 overflows (`{aten}` in its backward, inputs {ranges})",
    "gradient-other": "`{aten}` in its backward made it from finite inputs ({ranges})",
}
_LOG_FIX = ("Clamp the input (`x.clamp_min(1e-8)`), or use the stable form: `F.log_softmax` instead of `torch.log(softmax)`, "
            "`F.logsigmoid` instead of `log(sigmoid)`, a logits loss (`cross_entropy`, `binary_cross_entropy_with_logits`).")
_DOMAIN_FIX = "Clamp the input inside the domain (`x.clamp(-1 + 1e-7, 1 - 1e-7)`)."
#: the fix of each cause (or of several), in the hint: "fix-<name>"
FIXES = {
    "log": _LOG_FIX,
    "root-of-negative": "Clamp the input (`x.clamp_min(0)`) or add an epsilon after making it non-negative "
    "(`torch.sqrt(x.abs() + 1e-8)` if the sign is noise).",
    "rsqrt": "Add an epsilon (`torch.rsqrt(x + 1e-8)`).",
    "division": "Keep the divisor away from 0: `x / (d + 1e-8)` or `d.clamp_min(1e-8)`; to normalise by a norm use "
    "`F.normalize(x, eps=1e-8)`.",
    "exp": "Subtract the maximum first (`torch.logsumexp`, `F.softmax` do), clamp the input, or compute in float32.",
    "domain": "Clamp the input into {domain}, with a margin (`x.clamp(-1 + 1e-7, 1 - 1e-7)`).",
    "pow": "Raise the absolute value (`x.abs() ** p`), or clamp the base (`x.clamp_min(0) ** p`).",
    "masked-row": "Mask with a large finite negative (`scores.masked_fill(mask, torch.finfo(scores.dtype).min)`), or skip "
    "rows with nothing to attend to.",
    "half": "Compute this op in float32 (`.float()`), prefer bfloat16 to float16, or let `torch.autocast` and `GradScaler` "
    "manage the precision.",
    "large-inputs": "Values this large usually come from a learning rate that is too high or unnormalised inputs: lower the "
    "learning rate, clip the gradients, normalise the inputs.",
    "finite-inputs": "Look at this op's inputs: values at the edge of its domain (log(0), division by 0, sqrt of a negative) "
    "or an overflow.",
    "gradient-sqrt": "Add an epsilon inside the root (`torch.sqrt(x + 1e-8)`), or clamp its input (`x.clamp_min(1e-8)`).",
    "gradient-rsqrt": "Add an epsilon (`torch.rsqrt(x + 1e-8)`).",
    "gradient-pow": "Add an epsilon to the base (`(x + 1e-8) ** p`) or clamp it.",
    "gradient-log": "Clamp the input (`x.clamp_min(1e-8)`), or use the stable form (`F.log_softmax`, `F.logsigmoid`, a "
    "logits loss).",
    "gradient-acos": _DOMAIN_FIX,
    "gradient-asin": _DOMAIN_FIX,
    "gradient-atanh": _DOMAIN_FIX,
    "gradient-div": "Keep the divisor away from 0 (`d.clamp_min(1e-8)` or `d + 1e-8`); for a norm use "
    "`F.normalize(x, eps=1e-8)`.",
    "gradient-other": "Look at what that op is given: values at the edge of its domain, or large enough to overflow in "
    "backward.",
}

_DISTANCE = "for a distance, `torch.cdist(a, b)` or `torch.linalg.vector_norm(a - b, dim=-1)` have a gradient of 0 there."
_DOMAIN_EDGE = "Clamp the input inside the domain, with a margin (`x.clamp(-1 + 1e-6, 1 - 1e-6)`)"
#: the ops of the loss computation whose gradient is infinite at a point (observe/singular.py), by kind:
#: what its gradient does there, and the fix
SINGULAR = {
    "sqrt": ("the gradient of `sqrt` is infinite at 0",
             "Add an epsilon inside the root (`torch.sqrt(x + 1e-8)`) or clamp its input (`x.clamp_min(1e-8).sqrt()`); "
             + _DISTANCE),
    "rsqrt": ("the gradient of `rsqrt` is infinite at 0", "Add an epsilon inside the root (`torch.rsqrt(x + 1e-8)`)."),
    "pow": ("the gradient of `pow` with an exponent below 1 is infinite at 0",
            "Add an epsilon to the base (`(x + 1e-8) ** p`) or clamp it (`x.clamp_min(1e-8) ** p`); " + _DISTANCE),
    "acos": ("the gradient of `acos` is infinite at -1 and 1", _DOMAIN_EDGE + " before `acos`."),
    "asin": ("the gradient of `asin` is infinite at -1 and 1", _DOMAIN_EDGE + " before `asin`."),
    "atanh": ("the gradient of `atanh` is infinite at -1 and 1", _DOMAIN_EDGE + " before `atanh`."),
    "log": ("the gradient of `log` is infinite at 0",
            "Clamp the input (`x.clamp_min(1e-8)`), or use the stable form (`F.log_softmax`, `F.logsigmoid`, a logits loss)."),
    "div": ("the gradient of a division is infinite where the divisor is 0",
            "Keep the divisor away from 0 (`d.clamp_min(1e-8)` or `d + 1e-8`); to divide by a norm use "
            "`F.normalize(x, eps=1e-8)`."),
    "rdiv": ("the gradient of a division is infinite where the divisor is 0",
             "Keep the divisor away from 0 (`1 / d.clamp_min(1e-8)` or `1 / (d + 1e-8)`)."),
    "reciprocal": ("the gradient of `reciprocal` is infinite at 0", "Keep the input away from 0 (`x.clamp_min(1e-8).reciprocal()`)."),
}
#: what the input at the singular point holds (singular.py), by kind: at or near -1 and 1 (acos, asin,
#: atanh), at or near 0 (the others)
HOLDS = {
    "at-edges": "{count} value(s) at -1 or 1",
    "near-edges": "values within {distance:.3g} of -1 or 1",
    "zeros": "{count} zero(s)",
    "small": "values as small as {smallest:.3g}",
    "near-zero": "values near 0",
}
_EDGES = {"acos", "asin", "atanh"}


def _singular(kind: str, holds: str, function: bool) -> str:
    """The message of a singular op's gradient: its divisor or input holds `holds`, in a custom Function or not."""
    part = "divisor" if kind in ("div", "rdiv") else "input"
    where = (" in the forward of the custom autograd.Function `{function}`, whose backward computes this gradient,"
             if function else "")
    return ("{what} contain NaN or Inf, first produced by the backward of `{op}`" + where + " on this line: its " + part
            + " holds " + HOLDS[holds] + " ({operand}), and " + SINGULAR[kind][0])


_OP = "{what} contains NaN or Inf, first produced by `{op}` on this line: "
_BACKWARD_OF_OP = "{what} contain NaN or Inf, first produced by the backward of `{op}` on this line: "
#: a cause that names its inputs' ranges has a twin for an op given no tensor ("-no-inputs")
_NO_INPUTS = "no tensor inputs"

RULE = Rule(
    code="TD145",
    name="non-finite-values",
    category=Category.NUMERICS,
    severity=Severity.ERROR,
    proof="check",
    message="{what} contains NaN or Inf, first produced by {origin}",
    hint="Look at the named op's inputs: typical causes are log(0), division by zero, sqrt of a negative, exp overflow, or a learning rate that is too high.",
    variants={
        # the forward op that made it, found by replaying the step, by what its inputs show (a message
        # "<cause>") and the fix ("fix-<fix>")
        **{name: Variant(message=_OP + cause) for name, cause in CAUSES.items()},
        **{name + "-no-inputs": Variant(message=_OP + cause.replace("{ranges}", _NO_INPUTS))
           for name, cause in CAUSES.items() if "{ranges}" in cause},
        # the op whose backward made it, found by replaying the step
        **{name: Variant(message=_BACKWARD_OF_OP + cause) for name, cause in GRADIENT_CAUSES.items()},
        **{name + "-no-inputs": Variant(message=_BACKWARD_OF_OP + cause.replace("{ranges}", _NO_INPUTS))
           for name, cause in GRADIENT_CAUSES.items()},
        **{"fix-" + name: Variant(hint=fix) for name, fix in FIXES.items()},
        # an op whose gradient is infinite on the values it was given (singular.py), by its kind and what its divisor
        # or input holds ("singular-<kind>-<holds>"), in the forward of a custom autograd.Function ("...-in-function");
        # the hint is its fix ("singular-fix-<kind>", with "-in-function")
        **{f"singular-{kind}-{holds}" + ("-in-function" if function else ""): Variant(message=_singular(kind, holds, function))
           for kind in SINGULAR for holds in HOLDS if (holds in ("at-edges", "near-edges")) == (kind in _EDGES)
           for function in (False, True)},
        **{f"singular-fix-{kind}": Variant(hint=fix) for kind, (_, fix) in SINGULAR.items()},
        **{f"singular-fix-{kind}-in-function": Variant(hint=fix + " In `{function}.backward`, guard the same division.")
           for kind, (_, fix) in SINGULAR.items()},
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
