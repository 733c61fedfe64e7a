""""only Tensors of floating point and complex dtype can require gradients": which integer
tensor the user's line asked gradients of, read from the line (`x.requires_grad = True`,
`x.requires_grad_()`, `nn.Parameter(x)`, a factory given `requires_grad=True`) and the live
tensor, with the line that made it."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from torchdoctor.observe.crash.describe import line_nodes, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.observe.crash.provenance import made_fields
from torchdoctor.rules.grad_flow.requires_grad_on_integers import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_MESSAGE = re.compile(r"^[Oo]nly Tensors of floating point (and complex )?dtype can require gradients")


def requires_grad_on_integers(crash: Crash, session: Holdings | None) -> Explanation | None:
    torch = torch_module()
    frame = crash.user_frame()
    if crash.exc_type != "RuntimeError" or not _MESSAGE.match(crash.message) or torch is None or frame is None:
        return None
    nodes = line_nodes(frame)
    for node in nodes:
        name = _asked_of(node)
        value = frame.locals.get(name) if name is not None else None
        if name is not None and isinstance(value, torch.Tensor) and not (value.is_floating_point() or value.is_complex()):
            fields = {"name": name, "dtype": str(value.dtype).removeprefix("torch.")}
            made = made_fields(frame, name, of=ast.Call)
            return Explanation(RULE, fields | made, variant="made" if made else None)
    for node in nodes:
        if isinstance(node, ast.Call) and any(k.arg == "requires_grad" for k in node.keywords) and _whole_numbers(node):
            return Explanation(RULE, {"call": ast.unparse(node)}, variant="created")
    return None


def _asked_of(node: ast.AST) -> str | None:
    """The variable gradients are asked of: `x.requires_grad = True`, `x.requires_grad_()`,
    `nn.Parameter(x)`."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr == "requires_grad" and isinstance(target.value, ast.Name):
                return target.value.id
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "requires_grad_" and isinstance(func.value, ast.Name):
            return func.value.id
        callee = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if callee == "Parameter" and node.args and isinstance(node.args[0], ast.Name):
            return node.args[0].id
    return None


def _whole_numbers(call: ast.Call) -> bool:
    """The call's data are integer literals and no dtype is given: `torch.tensor([1, 2])`, `torch.arange(5)`."""
    if any(k.arg == "dtype" for k in call.keywords) or not call.args:
        return False
    constants: list[Any] = [n.value for n in ast.walk(call.args[0]) if isinstance(n, ast.Constant)]
    return bool(constants) and all(type(value) is int for value in constants)


ORDER = 52
EXPLAINERS = (requires_grad_on_integers,)
