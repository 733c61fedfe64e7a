"""Where a NaN or Inf was born: the first aten op that made a non-finite value from finite
inputs, its user line, the ranges of its inputs, and what they say about the cause.

Used only after the run has produced a non-finite value, on a private replay (forward, and
for gradients the backward too), so the cost of a dispatch mode that looks at every op is
paid once. A gradient's origin is named by the forward op whose backward made it: autograd's
anomaly mode records each node's forward stack while the replay's forward runs, and the
dispatch mode reads the node being executed (`torch._C._current_autograd_node()`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from torchdoctor.core.locate import caller_in_user_code, is_user_file
from torchdoctor.observe.events import Location
from torchdoctor.observe.faults import passes_through
from torchdoctor.observe.replay import leaves

_FRAME = re.compile(r'File "(?P<file>.+)", line (?P<line>\d+), in ')


@dataclass(frozen=True)
class Operand:
    """What an op was given: a tensor's dtype, shape and value range, or a number."""

    text: str
    low: float | None = None
    high: float | None = None
    zeros: int = 0
    negatives: int = 0
    neg_inf_rows: int = 0  # rows (last dim) that are entirely -inf (a softmax's input)
    dtype: str = ""


@dataclass
class Culprit:
    """The first op with finite inputs and a non-finite output."""

    op: str  # "log" (the aten op's base name)
    aten: str  # "aten::log"
    location: Location | None
    operands: list[Operand] = field(default_factory=list)
    output_dtype: str = ""
    backward_of: str | None = None  # "SqrtBackward0": the forward op whose gradient it is
    inf_source: Culprit | None = None  # the op that put in the Infs this one turned into NaN

    @property
    def place(self) -> Location | None:
        """The line to change: a masked softmax's NaN is fixed where the -inf was put in."""
        if self.op in _SOFTMAX and self.inf_source is not None and self.inf_source.location is not None:
            return self.inf_source.location
        return self.location

    @property
    def forward_op(self) -> str | None:
        """`sqrt` for a culprit in SqrtBackward0."""
        return re.sub(r"Backward\d*$", "", self.backward_of).lower() if self.backward_of else None


class FirstNonFinite(TorchDispatchMode):
    """Stops looking at the first op that makes a NaN from inputs without one, or an Inf from
    finite inputs (an Inf put in on purpose, a `-inf` mask, is not a culprit; a softmax that
    turns a row of them into NaN is)."""

    def __init__(self) -> None:
        super().__init__()
        self.culprit: Culprit | None = None
        #: the first op whose output had an Inf at all (a `-inf` mask put in on purpose)
        self.first_inf: Culprit | None = None

    @passes_through
    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        if self.culprit is None and any_non_finite(result):
            if (has_nan(result) and not has_nan((args, kwargs))) or not any_non_finite((args, kwargs)):
                self.culprit = _culprit(func, args, kwargs, result)
                self.culprit.inf_source = self.first_inf
            elif self.first_inf is None and not has_nan(result):
                self.first_inf = _culprit(func, args, kwargs, result)
        return result


def _culprit(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Culprit:
    name = func._schema.name if hasattr(func, "_schema") else str(func)  # "aten::log"
    node = torch._C._current_autograd_node()
    backward_of = type(node).__name__ if node is not None else None
    location = _forward_line(node) if node is not None else caller_in_user_code()
    outputs = [leaf for leaf in leaves(result) if isinstance(leaf, torch.Tensor)]
    return Culprit(
        op=name.split("::")[-1],
        aten=name,
        location=location,
        operands=[operand(value) for value in (*args, *kwargs.values()) if isinstance(value, (torch.Tensor, int, float))],
        output_dtype=_dtype(outputs[0]) if outputs else "",
        backward_of=backward_of,
    )


def _forward_line(node: Any) -> Location | None:
    """The user's line that made `node` in the forward pass (anomaly mode's record of it)."""
    stack = getattr(node, "metadata", {}).get("traceback_") or []
    found = None
    for entry in stack:
        for match in _FRAME.finditer(str(entry)):
            if is_user_file(match["file"]):
                found = (match["file"], int(match["line"]))
    return found


def operand(value: Any) -> Operand:
    """A tensor's dtype, shape and value range (zeros, negatives), or a number."""
    if not isinstance(value, torch.Tensor):
        return Operand(repr(value), low=float(value), high=float(value))
    shape = tuple(value.shape)
    if not value.is_floating_point() or value.numel() == 0:
        return Operand(f"{_dtype(value)} {shape}", dtype=_dtype(value))
    flat = value.detach().float()
    low, high = float(flat.min()), float(flat.max())
    rows = 0
    if value.dim() >= 1 and value.shape[-1] > 0:
        rows = int(torch.isneginf(flat).all(dim=-1).sum())
    return Operand(
        f"{_dtype(value)} {shape} in [{_number(low)}, {_number(high)}]",
        low=low, high=high, zeros=int((flat == 0).sum()), negatives=int((flat < 0).sum()), neg_inf_rows=rows, dtype=_dtype(value),
    )


def has_nan(value: Any) -> bool:
    return any(
        (isinstance(leaf, torch.Tensor) and leaf.is_floating_point() and leaf.numel() > 0 and bool(torch.isnan(leaf.detach()).any()))
        or (isinstance(leaf, float) and math.isnan(leaf))
        for leaf in leaves(value)
    )


def _dtype(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).replace("torch.", "")


def _number(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else str(value)


def any_non_finite(value: Any) -> bool:
    """A NaN or Inf among the floating tensors and the numbers in `value` (a `-inf` fill value
    makes the tensor it fills non-finite on purpose)."""
    return any(
        (isinstance(leaf, torch.Tensor) and leaf.is_floating_point() and leaf.numel() > 0 and not bool(torch.isfinite(leaf.detach()).all()))
        or (isinstance(leaf, float) and not math.isfinite(leaf))
        for leaf in leaves(value)
    )


# -- what the inputs say about the cause ------------------------------------------------------

_LOG = {"log", "log2", "log10", "xlogy"}
_ROOTS = {"sqrt", "rsqrt"}
_EXP = {"exp", "exp2", "expm1", "sinh", "cosh"}
_DIVISION = {"div", "reciprocal", "remainder", "fmod", "true_divide", "floor_divide"}
_DOMAIN = {"acos": "[-1, 1]", "asin": "[-1, 1]", "atanh": "(-1, 1)", "acosh": "[1, inf)", "log1p": "(-1, inf)"}
_SOFTMAX = {"_softmax", "_log_softmax", "softmax", "log_softmax"}
#: the largest finite value of each floating dtype
_LIMITS = {"float16": 65504.0, "bfloat16": 3.39e38, "float32": 3.40e38}
#: backward nodes whose gradient is infinite at a point of their input, and the remedy
_SINGULAR = {
    "Sqrt": ("the gradient of `sqrt` is infinite at 0", "Add an epsilon inside the root (`torch.sqrt(x + 1e-8)`), or clamp its input (`x.clamp_min(1e-8)`)."),
    "Rsqrt": ("the gradient of `rsqrt` is infinite at 0", "Add an epsilon (`torch.rsqrt(x + 1e-8)`)."),
    "Pow": ("the gradient of `pow` with an exponent below 1 is infinite at 0", "Add an epsilon to the base (`(x + 1e-8) ** p`) or clamp it."),
    "Log": ("the gradient of `log` is infinite at 0", "Clamp the input (`x.clamp_min(1e-8)`), or use the stable form (`F.log_softmax`, `F.logsigmoid`, a logits loss)."),
    "Acos": ("the gradient of `acos` is infinite at -1 and 1", "Clamp the input inside the domain (`x.clamp(-1 + 1e-7, 1 - 1e-7)`)."),
    "Asin": ("the gradient of `asin` is infinite at -1 and 1", "Clamp the input inside the domain (`x.clamp(-1 + 1e-7, 1 - 1e-7)`)."),
    "Atanh": ("the gradient of `atanh` is infinite at -1 and 1", "Clamp the input inside the domain (`x.clamp(-1 + 1e-7, 1 - 1e-7)`)."),
    "Div": ("the gradient of a division by a number near 0 overflows", "Keep the divisor away from 0 (`d.clamp_min(1e-8)` or `d + 1e-8`); for a norm use `F.normalize(x, eps=1e-8)`."),
}


def cause_of(culprit: Culprit) -> tuple[str, str]:
    """(what the inputs show, the fix), in words."""
    op, operands = culprit.op, culprit.operands
    ranges = ", ".join(o.text for o in operands if o.text) or "no tensor inputs"
    if culprit.backward_of is not None:
        said = _SINGULAR.get(re.sub(r"Backward\d*$", "", culprit.backward_of))
        if said is not None:
            return f"{said[0]} (`{culprit.aten}` in its backward, inputs {ranges})", said[1]
        return (f"`{culprit.aten}` in its backward made it from finite inputs ({ranges})",
                "Look at what that op is given: values at the edge of its domain, or large enough to overflow in backward.")
    first = operands[0] if operands else Operand("")
    if op in _LOG and first.low is not None:
        if first.negatives:
            return f"`{op}` of {first.negatives} negative number(s) gives NaN (input {first.text})", _LOG_FIX
        if first.zeros:
            return f"`{op}` of 0 gives -inf ({first.zeros} zero(s) in the input {first.text})", _LOG_FIX
    if op in _ROOTS and first.negatives:
        return f"`{op}` of {first.negatives} negative number(s) gives NaN (input {first.text})", "Clamp the input (`x.clamp_min(0)`) or add an epsilon after making it non-negative (`torch.sqrt(x.abs() + 1e-8)` if the sign is noise)."
    if op in _ROOTS and first.zeros:
        return f"`{op}` of 0 gives inf ({first.zeros} zero(s) in the input {first.text})", "Add an epsilon (`torch.rsqrt(x + 1e-8)`)."
    if op in _DIVISION:
        divisor = operands[1] if len(operands) > 1 else first
        if divisor.zeros or divisor.low == 0:
            return f"a division by 0 (the divisor {divisor.text} has {divisor.zeros or 'a'} zero(s))", "Keep the divisor away from 0: `x / (d + 1e-8)` or `d.clamp_min(1e-8)`; to normalise by a norm use `F.normalize(x, eps=1e-8)`."
    if op in _EXP:
        limit = math.log(_LIMITS.get(culprit.output_dtype, 3.40e38))
        return (f"`{op}` overflows {culprit.output_dtype or 'its dtype'} above {limit:.1f} (input {first.text})",
                "Subtract the maximum first (`torch.logsumexp`, `F.softmax` do), clamp the input, or compute in float32.")
    if op in _DOMAIN:
        return f"`{op}` is defined on {_DOMAIN[op]} only (input {first.text})", f"Clamp the input into {_DOMAIN[op]}, with a margin (`x.clamp(-1 + 1e-7, 1 - 1e-7)`)."
    if op == "pow" and first.negatives:
        return f"`pow` of {first.negatives} negative base(s) to a fractional exponent gives NaN (base {first.text})", "Raise the absolute value (`x.abs() ** p`), or clamp the base (`x.clamp_min(0) ** p`)."
    if op in _SOFTMAX and first.neg_inf_rows:
        source = culprit.inf_source
        put_in = f", put in on this line by `{source.op}`" if source is not None and culprit.place == source.location else ""
        return (f"`{op}` over {first.neg_inf_rows} row(s) that are entirely -inf (a fully masked row{put_in}) gives NaN",
                "Mask with a large finite negative (`scores.masked_fill(mask, torch.finfo(scores.dtype).min)`), or skip rows with nothing to attend to.")
    largest = _LIMITS.get(culprit.output_dtype)
    if largest is not None and culprit.output_dtype in ("float16", "bfloat16"):
        return (f"`{op}` overflows {culprit.output_dtype} (largest finite value {largest:g}; inputs {ranges})",
                "Compute this op in float32 (`.float()`), prefer bfloat16 to float16, or let `torch.autocast` and `GradScaler` manage the precision.")
    largest = max((abs(v) for o in operands for v in (o.low, o.high) if v is not None), default=0.0)
    if largest > 1e18:
        return (f"`{op}` overflows {culprit.output_dtype or 'its dtype'}: its inputs reach {largest:.3g} ({ranges})",
                "Values this large usually come from a learning rate that is too high or unnormalised inputs: lower the learning rate, clip the gradients, normalise the inputs.")
    return f"`{op}`: its inputs are finite ({ranges}), its output is not", "Look at this op's inputs: values at the edge of its domain (log(0), division by 0, sqrt of a negative) or an overflow."


_LOG_FIX = ("Clamp the input (`x.clamp_min(1e-8)`), or use the stable form: `F.log_softmax` instead of `torch.log(softmax)`, "
            "`F.logsigmoid` instead of `log(sigmoid)`, a logits loss (`cross_entropy`, `binary_cross_entropy_with_logits`).")
