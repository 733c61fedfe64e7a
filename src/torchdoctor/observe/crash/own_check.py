"""A check of the user's own failed: an `assert` on the user's line, or a `raise` right under an
`if` (`if hidden.size(0) != target.size(0): raise RuntimeError(...)`). Python says only that it
failed; the finding gives the values the test read: the variables and attribute chains in it,
read without running the user's code (a tensor by its shape)."""

from __future__ import annotations

import ast
import inspect
import types
from typing import TYPE_CHECKING, Any

from torchdoctor.introspect.source import module_tree
from torchdoctor.observe.crash.describe import MISSING, resolve, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash, Frame
from torchdoctor.rules.api.own_check_failed import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_SHOWN = 40  # characters of a value's repr
_VALUES = 6  # values named in the message


def own_check_failed(crash: Crash, session: Holdings | None) -> Explanation | None:
    frame = crash.user_frame()
    if frame is None or frame.live is None or crash.frames[-1] is not frame:
        return None  # raised deeper, in a library: not the user's own check
    check = _check_at(frame)
    if check is None:
        return None
    test, raised = check
    values = _values(test, frame)
    if not values:
        return None
    fields = {"test": ast.unparse(test), "values": ", ".join(f"`{name}` = {shown}" for name, shown in values[:_VALUES])}
    if raised:
        return Explanation(RULE, fields | {"error": crash.exc_type}, variant="raised")
    return Explanation(RULE, fields) if crash.exc_type == "AssertionError" else None


def _check_at(frame: Frame) -> tuple[ast.expr, bool] | None:
    """(the test, whether it is an `if` above a `raise`) of the statement at the frame's line."""
    tree = module_tree(frame.file)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and node.lineno == frame.line:
            return node.test, False
        if isinstance(node, ast.If) and node.body and isinstance(node.body[0], ast.Raise) and node.body[0].lineno <= frame.line <= (
                node.body[0].end_lineno or node.body[0].lineno):
            return node.test, True
    return None


def _values(test: ast.expr, frame: Frame) -> list[tuple[str, str]]:
    """(text, value in words) of the outermost variables and attribute chains the test reads."""
    found: dict[str, str] = {}
    stack: list[ast.AST] = [test]
    while stack:
        node = stack.pop(0)
        if isinstance(node, (ast.Name, ast.Attribute)):
            value = resolve(node, frame)
            if value is not MISSING and not _opaque(value):
                found.setdefault(ast.unparse(node), _shown(value))
                continue
        stack.extend(ast.iter_child_nodes(node))
    return list(found.items())


def _opaque(value: Any) -> bool:
    """Values whose words would say nothing: functions, classes, modules."""
    return callable(value) and not _is_tensor(value) or isinstance(value, types.ModuleType) or inspect.isclass(value)


def _is_tensor(value: Any) -> bool:
    torch = torch_module()
    return torch is not None and isinstance(value, torch.Tensor)


def _shown(value: Any) -> str:
    if _is_tensor(value):
        return f"a tensor of shape {list(value.shape)}" if value.dim() else f"tensor({value.item()!r})"
    shown = repr(value)
    return shown if len(shown) <= _SHOWN else shown[:_SHOWN] + "..."


ORDER = 90
EXPLAINERS = (own_check_failed,)
