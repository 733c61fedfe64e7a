""""Dimension out of range (expected to be in range of [-1, 0], but got 1)": the call on the
user's line that asks a variable of that many dimensions for that dimension (`torch.max(out, 1)`,
`out.softmax(dim=1)`, `x.size(2)`), read from the line and the live variables."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from torchdoctor.observe.crash.describe import line_nodes, resolve, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.rules.api.dimension_out_of_range import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_RANGE = re.compile(r"Dimension out of range \(expected to be in range of \[(?P<low>-?\d+), (?P<high>-?\d+)\], but got (?P<got>-?\d+)\)")


def dimension_out_of_range(crash: Crash, session: Holdings | None) -> Explanation | None:
    match = _RANGE.search(crash.message) if crash.exc_type == "IndexError" else None
    torch = torch_module()
    frame = crash.user_frame()
    if match is None or torch is None or frame is None:
        return None
    ndim, got = int(match["high"]) + 1, int(match["got"])
    calls = [n for n in line_nodes(frame) if isinstance(n, ast.Call)]
    found: list[tuple[ast.Call, ast.expr, Any]] = []
    for call in calls:
        subject = _subject(call)
        value = resolve(subject, frame) if subject is not None else None
        if subject is not None and isinstance(value, torch.Tensor) and value.dim() == ndim and got in _dims(call, subject):
            found.append((call, subject, value))
    if len(found) != 1:
        return None
    call, subject, value = found[0]
    return Explanation(RULE, {"call": ast.unparse(call), "dim": got, "name": ast.unparse(subject), "shape": list(value.shape),
                              "ndim": ndim, "low": match["low"], "high": match["high"]})


def _subject(call: ast.Call) -> ast.expr | None:
    """The tensor the call works on: the receiver of a method (`out.max(1)`), else the first argument."""
    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and call.func.value.id not in ("torch", "F"):
        return call.func.value
    return call.args[0] if call.args else None


def _dims(call: ast.Call, subject: ast.expr) -> set[int]:
    """The integer literals the call passes besides its subject (`dim=1`, `max(out, 1)`)."""
    values = [k.value for k in call.keywords if k.arg in ("dim", "dim0", "dim1", "axis")]
    values += [a for a in call.args if a is not subject]
    return {int(v.value) for v in values if isinstance(v, ast.Constant) and type(v.value) is int} | {
        -int(v.operand.value) for v in values
        if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub) and isinstance(v.operand, ast.Constant) and type(v.operand.value) is int}


ORDER = 77
EXPLAINERS = (dimension_out_of_range,)
