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
#: backward nodes whose gradient is infinite at a point of their input (their causes in TD145's rule)
_SINGULAR = {"Sqrt", "Rsqrt", "Pow", "Log", "Acos", "Asin", "Atanh", "Div"}


@dataclass(frozen=True)
class Cause:
    """What the inputs show, as the names of TD145's variants that word it (rules/numerics/
    non_finite_values.py: `cause` sets the message, `fix` the hint) and the facts they name."""

    cause: str
    fix: str
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def variant(self) -> tuple[str, str]:
        return (self.cause, "fix-" + self.fix)


def cause_of(culprit: Culprit) -> Cause:
    """What the inputs of `culprit` show, and the fix (the op itself fills the message's `{op}`)."""
    op, operands = culprit.op, culprit.operands
    ranges = ", ".join(o.text for o in operands if o.text)
    no_inputs = "" if ranges else "-no-inputs"
    with_ranges = {"ranges": ranges} if ranges else {}
    if culprit.backward_of is not None:
        node = re.sub(r"Backward\d*$", "", culprit.backward_of)
        name = f"gradient-{node.lower()}" if node in _SINGULAR else "gradient-other"
        return Cause(name + no_inputs, name, {"aten": culprit.aten, **with_ranges})
    first = operands[0] if operands else Operand("")
    if op in _LOG and first.low is not None:
        if first.negatives:
            return Cause("log-of-negative", "log", {"negatives": first.negatives, "input": first.text})
        if first.zeros:
            return Cause("log-of-zero", "log", {"zeros": first.zeros, "input": first.text})
    if op in _ROOTS and first.negatives:
        return Cause("root-of-negative", "root-of-negative", {"negatives": first.negatives, "input": first.text})
    if op in _ROOTS and first.zeros:
        return Cause("root-of-zero", "rsqrt", {"zeros": first.zeros, "input": first.text})
    if op in _DIVISION:
        divisor = operands[1] if len(operands) > 1 else first
        if divisor.zeros:
            return Cause("division-by-zero", "division", {"divisor": divisor.text, "zeros": divisor.zeros})
        if divisor.low == 0:
            return Cause("division-by-zero-number", "division", {"divisor": divisor.text})
    if op in _EXP:
        limit = math.log(_LIMITS.get(culprit.output_dtype, 3.40e38))
        dtype = {"dtype": culprit.output_dtype} if culprit.output_dtype else {}
        return Cause("exp-overflow" if dtype else "exp-overflow-no-dtype", "exp", {"limit": limit, "input": first.text, **dtype})
    if op in _DOMAIN:
        return Cause("out-of-domain", "domain", {"domain": _DOMAIN[op], "input": first.text})
    if op == "pow" and first.negatives:
        return Cause("pow-of-negative", "pow", {"negatives": first.negatives, "input": first.text})
    if op in _SOFTMAX and first.neg_inf_rows:
        source = culprit.inf_source
        if source is not None and culprit.place == source.location:
            return Cause("masked-row-put-in", "masked-row", {"rows": first.neg_inf_rows, "source": source.op})
        return Cause("masked-row", "masked-row", {"rows": first.neg_inf_rows})
    largest = _LIMITS.get(culprit.output_dtype)
    if largest is not None and culprit.output_dtype in ("float16", "bfloat16"):
        return Cause("half-overflow" + no_inputs, "half", {"dtype": culprit.output_dtype, "largest": largest, **with_ranges})
    largest = max((abs(v) for o in operands for v in (o.low, o.high) if v is not None), default=0.0)
    if largest > 1e18:
        dtype = {"dtype": culprit.output_dtype} if culprit.output_dtype else {}
        return Cause("large-inputs" + ("" if dtype else "-no-dtype") + no_inputs, "large-inputs",
                     {"largest": largest, **dtype, **with_ranges})
    return Cause("finite-inputs" + no_inputs, "finite-inputs", with_ranges)
