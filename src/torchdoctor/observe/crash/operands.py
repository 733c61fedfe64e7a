"""Shape crashes of an arithmetic operator or of `torch.cat` on the user's line, explained with
the operands' names and shapes. Operands are read only when they are variables or attribute
chains of variables (no code of the user's runs again), and the line must hold exactly one
operation whose operands really disagree."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from torchdoctor.observe.crash.describe import line_nodes, resolve, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash, Frame
from torchdoctor.rules.api.tensor_shapes_mismatch import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_BROADCAST = re.compile(r"The size of tensor a \((?P<a>\d+)\) must match the size of tensor b \((?P<b>\d+)\) at non-singleton dimension (?P<dim>\d+)")
_CAT = re.compile(r"Sizes of tensors must match except in dimension (?P<dim>\d+)\. Expected size \d+ but got size \d+ for tensor number (?P<index>\d+) in the list")
_CAT_DIMS = re.compile(r"Tensors must have same number of dimensions: got (?P<first>\d+) and (?P<other>\d+)")
#: methods that broadcast their mask against the tensor they are called on
_MASKED = frozenset({"masked_fill", "masked_fill_", "masked_scatter", "masked_scatter_"})
_CATS = frozenset({"cat", "concat", "concatenate"})


def operands_disagree(crash: Crash, session: Holdings | None) -> Explanation | None:
    torch = torch_module()
    frame = crash.user_frame()
    if crash.exc_type != "RuntimeError" or torch is None or frame is None:
        return None
    broadcast, cat, dims = _BROADCAST.search(crash.message), _CAT.search(crash.message), _CAT_DIMS.search(crash.message)
    if broadcast is None and cat is None and dims is None:
        return None
    nodes = line_nodes(frame)
    if broadcast is not None:
        return _broadcast(broadcast, nodes, frame, torch)
    if cat is not None:
        return _cat(cat, nodes, frame, torch)
    return _cat_dims(dims, nodes, frame, torch) if dims is not None else None


def _broadcast(match: re.Match[str], nodes: list[ast.AST], frame: Frame, torch: Any) -> Explanation | None:
    products = {(id(n.left), id(n.right)) for n in nodes if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult)}
    pairs = [(n.left, n.right) for n in nodes if isinstance(n, ast.BinOp)]
    pairs += [(n.target, n.value) for n in nodes if isinstance(n, ast.AugAssign)]
    pairs += [(n.func.value, n.args[0]) for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and n.func.attr in _MASKED and n.args]
    found = []
    for left, right in pairs:
        a, b = resolve(left, frame), resolve(right, frame)
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and not _broadcastable(a.shape, b.shape):
            found.append((left, a, right, b))
    if not found and len(pairs) == 1:
        return _one_side_read(match, *pairs[0], frame, torch)
    if len(found) != 1:
        return None
    left, a, right, b = found[0]
    fields = {"left": ast.unparse(left), "left_shape": list(a.shape), "right": ast.unparse(right), "right_shape": list(b.shape)}
    if (id(left), id(right)) in products and a.dim() >= 2 and b.dim() >= 2 and a.shape[-1] == b.shape[-2]:
        return Explanation(RULE, fields, variant="matrix-product")  # `*` multiplies element by element
    return Explanation(RULE, fields | {"a": match["a"], "b": match["b"], "dim": match["dim"]})


def _one_side_read(match: re.Match[str], left: ast.expr, right: ast.expr, frame: Frame, torch: Any) -> Explanation | None:
    """The line's one operation, with one operand readable (a variable) and the other not (a
    call, a slice): the sizes the message gives, the known one confirmed on the readable side."""
    dim = int(match["dim"])
    sides = [(left, right, match["a"], match["b"]), (right, left, match["b"], match["a"])]
    for known, other, size, other_size in sides:
        value = resolve(known, frame)
        if isinstance(value, torch.Tensor) and value.dim() == 1 and dim == 0 and int(value.shape[0]) == int(size):
            return Explanation(RULE, {"known": ast.unparse(known), "other": ast.unparse(other),
                                      "size": size, "other_size": other_size}, variant="one-side")
    return None


def _joined(nodes: list[ast.AST]) -> tuple[ast.Call, list[ast.expr]] | None:
    """The one `torch.cat([...])` on the line, with the items of its list."""
    calls = [n for n in nodes if isinstance(n, ast.Call) and _callee(n) in _CATS and n.args and isinstance(n.args[0], (ast.List, ast.Tuple))]
    return (calls[0], calls[0].args[0].elts) if len(calls) == 1 else None  # type: ignore[attr-defined]


def _cat(match: re.Match[str], nodes: list[ast.AST], frame: Frame, torch: Any) -> Explanation | None:
    joined = _joined(nodes)
    if joined is None:
        return None
    call, items = joined
    index = int(match["index"])
    values = [resolve(item, frame) for item in items]
    if index >= len(items) or not all(isinstance(v, torch.Tensor) for v in (values[0], values[index])):
        return None
    return Explanation(RULE, {"call": ast.unparse(call), "dim": match["dim"], "first": ast.unparse(items[0]),
                              "first_shape": list(values[0].shape), "other": ast.unparse(items[index]),
                              "other_shape": list(values[index].shape)}, variant="cat")


def _cat_dims(match: re.Match[str], nodes: list[ast.AST], frame: Frame, torch: Any) -> Explanation | None:
    """"Tensors must have same number of dimensions": the first item, and the first that has
    another number of dimensions (both variables)."""
    joined = _joined(nodes)
    if joined is None:
        return None
    call, items = joined
    values = [resolve(item, frame) for item in items]
    if not all(isinstance(v, torch.Tensor) for v in values) or values[0].dim() != int(match["first"]):
        return None
    index = next((i for i, v in enumerate(values) if v.dim() == int(match["other"])), None)
    if index is None:
        return None
    return Explanation(RULE, {"call": ast.unparse(call), "first": ast.unparse(items[0]), "first_shape": list(values[0].shape),
                              "other": ast.unparse(items[index]), "other_shape": list(values[index].shape)}, variant="cat-dims")


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _broadcastable(a: Any, b: Any) -> bool:
    return all(x == y or x == 1 or y == 1 for x, y in zip(reversed(list(a)), reversed(list(b))))


ORDER = 75
EXPLAINERS = (operands_disagree,)
