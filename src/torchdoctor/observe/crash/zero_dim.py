""""invalid index of a 0-dim tensor": the subscript on the user's line whose value is a 0-dim
tensor (a loss, a full reduction), read from the line and the live variables; TD179 flags the
same statically."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchdoctor.observe.crash.describe import line_nodes, resolve, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.rules.api.zero_dim_index import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_MESSAGE = "invalid index of a 0-dim tensor"


def zero_dim_index(crash: Crash, session: Holdings | None) -> Explanation | None:
    torch = torch_module()
    frame = crash.user_frame()
    if torch is None or frame is None or crash.exc_type != "IndexError" or _MESSAGE not in crash.message:
        return None
    found = [node for node in line_nodes(frame) if isinstance(node, ast.Subscript)
             and isinstance(value := resolve(_number(node.value), frame), torch.Tensor) and value.dim() == 0]
    if len(found) != 1:
        return None
    indexed = found[0].value
    number = _number(indexed)
    return Explanation(RULE, {"expression": ast.unparse(found[0]), "why": f"`{ast.unparse(indexed)}` holds one value, of shape []",
                              "fixed": f"{ast.unparse(number)}.item()"})


def _number(indexed: ast.expr) -> ast.expr:
    """`loss` for `loss.data` (the same values and shape; `.data` is not read through `resolve`,
    which reads no descriptors)."""
    return indexed.value if isinstance(indexed, ast.Attribute) and indexed.attr == "data" else indexed


ORDER = 79
EXPLAINERS = (zero_dim_index,)
