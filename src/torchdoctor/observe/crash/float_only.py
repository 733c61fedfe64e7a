""""mean(): could not infer output dtype ... Got: Bool", "std and var only support floating point
and complex dtypes", "Subtraction, the `-` operator, with a bool tensor is not supported": the
operand on the user's line (read from the line and the live variables, never by running the
user's expression again), its dtype, and the line that made it."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from torchdoctor.observe.crash.describe import line_nodes, resolve, tensor_call, tensor_dtype, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash, Frame
from torchdoctor.observe.crash.provenance import made_fields
from torchdoctor.rules.dtype.float_only_op_on_integers import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_AVERAGE = re.compile(r"^(?P<op>mean|nanmean)\(\): could not infer output dtype\. Input dtype must be either a floating point or complex dtype\. Got: (?P<dtype>\w+)")
_SPREAD = "std and var only support floating point and complex dtypes"
_BOOL_MINUS = re.compile(r"(Subtraction|Negation), the `-` operator, (with|on) a bool tensor is not supported")
#: the reductions each message is about
_OPS = {"mean": ("mean",), "nanmean": ("nanmean",), "spread": ("std", "var", "std_mean", "var_mean")}


def float_only_op_on_integers(crash: Crash, session: Holdings | None) -> Explanation | None:
    torch = torch_module()
    frame = crash.user_frame()
    if torch is None or frame is None or crash.exc_type not in ("RuntimeError", "NotImplementedError"):  # torch 2.14: NotImplementedError for bools
        return None
    average = _AVERAGE.match(crash.message)
    if average is not None or crash.message.startswith(_SPREAD):
        ops = _OPS[average["op"] if average is not None else "spread"]
        found = [(op, operand) for node in line_nodes(frame) if (reduced := _reduced(node, ops)) is not None
                 for op, operand in [reduced]]
        said = _explain(found, frame, torch, lambda value: not (value.is_floating_point() or value.is_complex()), "")
        compared = [(op, operand) for op, operand in found if isinstance(operand, ast.Compare)]
        if said is None and average is not None and average["dtype"] == "Bool" and len(compared) == 1:
            return Explanation(RULE, {"expr": ast.unparse(compared[0][1]), "op": compared[0][0], "dtype": "bool"})
        return said
    if _BOOL_MINUS.search(crash.message):
        found = [("-", operand) for node in line_nodes(frame) for operand in _subtracted(node)]
        return _explain(found, frame, torch, lambda value: value.dtype == torch.bool, "bool-minus")
    return None


def _reduced(node: ast.AST, ops: tuple[str, ...]) -> tuple[str, ast.expr] | None:
    """(op, operand) of `x.mean()` or `torch.mean(x)`."""
    called = tensor_call(node, ops)
    return (called[0], called[1]) if called is not None else None


def _subtracted(node: ast.AST) -> list[ast.expr]:
    """The operands of a `-` (binary, augmented or unary)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
        return [node.left, node.right]
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Sub):
        return [node.target, node.value]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return [node.operand]
    return []


def _explain(found: list[tuple[str, ast.expr]], frame: Frame, torch: Any, refused: Any, variant: str) -> Explanation | None:
    """The one operand on the line that holds a refused tensor, named (with the line that made it)."""
    named = [(op, operand, value) for op, operand in found
             if isinstance(value := resolve(operand, frame), torch.Tensor) and refused(value)]
    if len({ast.unparse(operand) for _, operand, _ in named}) != 1:
        return None
    op, operand, value = named[0]
    fields: dict[str, Any] = {"expr": ast.unparse(operand)}
    if op != "-":
        fields |= {"op": op, "dtype": tensor_dtype(value)}
    made = made_fields(frame, operand.id if isinstance(operand, ast.Name) else None)
    if made:
        fields |= made
        variant = f"{variant}-made" if variant else "made"
    return Explanation(RULE, fields, variant=variant or None)


ORDER = 54
EXPLAINERS = (float_only_op_on_integers,)
