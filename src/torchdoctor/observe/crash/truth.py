""""Boolean value of Tensor with more than one value is ambiguous": the condition on the user's
line that holds a tensor of several values, read from the line (the test of an `if`, `while`,
`assert`, a conditional expression, an operand of `and`/`or`/`not`) and the live variables
(never by running the user's expression again)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from torchdoctor.observe.crash.describe import line_nodes, resolve, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash, Frame
from torchdoctor.rules.api.tensor_truth_ambiguous import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings


def tensor_truth_ambiguous(crash: Crash, session: Holdings | None) -> Explanation | None:
    torch = torch_module()
    frame = crash.user_frame()
    if crash.exc_type != "RuntimeError" or "Boolean value of Tensor with more than one value is ambiguous" not in crash.message:
        return None
    if torch is None or frame is None:
        return None
    nodes = line_nodes(frame)
    found = []
    for construct, test in _conditions(nodes):
        named = _several(test, frame, torch)
        if named is not None:
            found.append((construct, test, *named))
    if len(found) != 1:
        return None
    construct, test, name, tensor = found[0]
    return Explanation(RULE, {"test": ast.unparse(test), "count": tensor.numel(), "tensor": name,
                              "shape": list(tensor.shape), "construct": construct})


def _conditions(nodes: list[ast.AST]) -> list[tuple[str, ast.expr]]:
    """(the construct, its condition) of each truth test on the line."""
    found: list[tuple[str, ast.expr]] = []
    for node in nodes:
        if isinstance(node, (ast.If, ast.IfExp)):
            found.append(("`if`", node.test))
        elif isinstance(node, ast.While):
            found.append(("`while`", node.test))
        elif isinstance(node, ast.Assert):
            found.append(("`assert`", node.test))
        elif isinstance(node, ast.BoolOp):
            word = "`and`" if isinstance(node.op, ast.And) else "`or`"
            found.extend((word, value) for value in node.values if not isinstance(value, ast.BoolOp))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            found.append(("`not`", node.operand))
    return [(construct, test) for construct, test in found if not isinstance(test, ast.BoolOp)]


def _several(test: ast.expr, frame: Frame, torch: Any) -> tuple[str, Any] | None:
    """(name, tensor): the variable of several values the condition is, or compares."""
    operands = [test.left, *test.comparators] if isinstance(test, ast.Compare) else [test]
    for operand in operands:
        if isinstance(operand, ast.Name):
            value = resolve(operand, frame)
            if isinstance(value, torch.Tensor) and value.numel() > 1:
                return operand.id, value
    return None


ORDER = 76
EXPLAINERS = (tensor_truth_ambiguous,)
