""""'int' object has no attribute 'shape'" on the user's line: a Python number, list, tuple or
string where the line wants a tensor (the attribute is a tensor's). The value is the one
attribute chain on the line that holds an object of the type the message names (read without
running the user's code); when it is a parameter handed on unchanged from caller to caller, the
finding goes to the call where it entered, the line that passed the wrong kind of value."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from torchdoctor.observe.crash.describe import NO_ATTRIBUTE, asked_of, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.observe.crash.provenance import crashes_at, passed_in
from torchdoctor.rules.api.not_a_tensor import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_PLAIN = frozenset({"int", "float", "bool", "list", "tuple", "str"})
_SHOWN = 40  # characters of the value's repr in the message


def not_a_tensor(crash: Crash, session: Holdings | None) -> Explanation | None:
    match = NO_ATTRIBUTE.match(crash.message) if crash.exc_type == "AttributeError" else None
    torch = torch_module()
    frame = crash.user_frame()
    if match is None or match["type"] not in _PLAIN or torch is None or frame is None or frame.live is None:
        return None
    kind, attribute = match["type"], match["attribute"]
    if not hasattr(torch.Tensor, attribute):
        return None  # not a tensor's attribute: another mix-up
    held = asked_of(frame, attribute, lambda value: type(value).__name__ == kind)
    if len(held) != 1:
        return None
    name, (expr, value) = next(iter(held.items()))
    fields = {"name": name, "kind": f"{'an' if kind == 'int' else 'a'} {kind}", "value": _shown(value, torch),
              "attribute": attribute}
    entered = passed_in(crash, frame, expr.id) if isinstance(expr, ast.Name) else None
    if entered is None:
        return Explanation(RULE, fields)
    caller, argument = entered
    return Explanation(RULE, fields | {"argument": ast.unparse(argument), "crashed": crashes_at(crash),
                                       "function": frame.function},
                       at=(caller.file, caller.line), variant="passed")


def _shown(value: Any, torch: Any) -> str:
    """`5`, `'train'`, `2 tensors of shape [3]`, `4 items`: the value in a few words."""
    if isinstance(value, (list, tuple)):
        shapes = {tuple(item.shape) for item in value if isinstance(item, torch.Tensor)}
        if value and len(shapes) == 1 and all(isinstance(item, torch.Tensor) for item in value):
            return f"{len(value)} tensors of shape {list(shapes.pop())}"
        return f"{len(value)} items"
    shown = repr(value)
    return shown if len(shown) <= _SHOWN else shown[:_SHOWN] + "..."


ORDER = 83
EXPLAINERS = (not_a_tensor,)
