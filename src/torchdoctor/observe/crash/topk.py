""""selected index k out of range": the `topk` on the user's line, its `k` and dimension, and the
size of that dimension of the tensor (a variable, read live, never by running the user's
expression again)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from torchdoctor.observe.crash.describe import line_nodes, resolve, tensor_call, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash, Frame
from torchdoctor.rules.api.topk_out_of_range import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings


def topk_out_of_range(crash: Crash, session: Holdings | None) -> Explanation | None:
    torch = torch_module()
    frame = crash.user_frame()
    if torch is None or frame is None or crash.exc_type != "RuntimeError" or "selected index k out of range" not in crash.message:
        return None
    found = []
    for node in line_nodes(frame):
        asked = _asked(node, frame)
        if asked is not None and isinstance(asked[1], torch.Tensor):
            receiver, tensor, k, dim = asked
            if -tensor.dim() <= dim < tensor.dim() and k > tensor.shape[dim]:
                found.append((node, receiver, tensor, k, dim))
    if len(found) != 1:
        return None
    node, receiver, tensor, k, dim = found[0]
    return Explanation(RULE, {"call": ast.unparse(node), "k": k, "dim": dim, "name": ast.unparse(receiver),
                              "shape": list(tensor.shape), "size": int(tensor.shape[dim])})


def _asked(node: ast.AST, frame: Frame) -> tuple[ast.expr, Any, int, int] | None:
    """(receiver, its value, k, dim) of `x.topk(k, dim)` or `torch.topk(x, k, dim)`."""
    called = tensor_call(node, ("topk",))
    if called is None or not isinstance(node, ast.Call):
        return None
    _, owner, args = called
    keywords = {keyword.arg: keyword.value for keyword in node.keywords}
    k = _number(args[0] if args else keywords.get("k"), frame)
    dim = _number(args[1] if len(args) > 1 else keywords.get("dim", ast.Constant(-1)), frame)
    if k is None or dim is None:
        return None
    return owner, resolve(owner, frame), k, dim


def _number(expr: ast.expr | None, frame: Frame) -> int | None:
    """An int written on the line, or held by a variable."""
    if expr is None:
        return None
    if isinstance(expr, ast.Constant) or (isinstance(expr, ast.UnaryOp) and isinstance(expr.operand, ast.Constant)):
        value: Any = ast.literal_eval(expr)
    else:
        value = resolve(expr, frame)
    return value if type(value) is int else None


ORDER = 81
EXPLAINERS = (topk_out_of_range,)
