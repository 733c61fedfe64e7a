""""result type Float can't be cast to the desired output type Long": the in-place statement on
the user's line (`a += b`, `a.mul_(0.9)`) whose target holds a narrower dtype than its result,
read from the line and the live variables, with the line that made the target."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from torchdoctor.observe.crash.describe import dtype_name, line_nodes, resolve, tensor_dtype, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.observe.crash.provenance import made_fields
from torchdoctor.rules.dtype.inplace_result_dtype import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_CAST = re.compile(r"^result type (?P<result>\w+) can't be cast to the desired output type (?P<output>\w+)")
_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_METHODS = {"add_": "+", "sub_": "-", "mul_": "*", "div_": "/", "pow_": "**"}


def inplace_result_dtype(crash: Crash, session: Holdings | None) -> Explanation | None:
    torch = torch_module()
    frame = crash.user_frame()
    match = _CAST.match(crash.message) if crash.exc_type == "RuntimeError" else None
    if torch is None or frame is None or match is None:
        return None
    found = []
    for node in line_nodes(frame):
        written = _written(node)
        if written is None:
            continue
        target, op = written
        value = resolve(target, frame)
        if isinstance(value, torch.Tensor) and tensor_dtype(value) == dtype_name(match["output"]):
            found.append((node, target, op, value))
    if len(found) != 1:
        return None
    node, target, op, value = found[0]
    fields = {"statement": ast.unparse(node), "target": ast.unparse(target), "op": op,
              "dtype": tensor_dtype(value), "result": dtype_name(match["result"])}
    made = made_fields(frame, target.id if isinstance(target, ast.Name) else None)
    return Explanation(RULE, fields | made, variant="made" if made else None)


def _written(node: ast.AST) -> tuple[ast.expr, str] | None:
    """(the tensor written into, the operator) of `a += b` or `a.add_(b)`."""
    if isinstance(node, ast.AugAssign) and type(node.op) in _OPERATORS and isinstance(node.target, (ast.Name, ast.Attribute)):
        return node.target, _OPERATORS[type(node.op)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _METHODS:
        return node.func.value, _METHODS[node.func.attr]
    return None


ORDER = 56
EXPLAINERS = (inplace_result_dtype,)
