""""too many values to unpack (expected 2)" on the user's line, explained by what was unpacked: a
tensor (unpacking splits its first dimension), a dict (iterating it gives its keys, not pairs),
a tuple or list of another length. The unpacking is found by the names it binds (as many as the
message expects) and its value read only when it is a variable or an attribute chain of one (no
code of the user's runs again). Of the unpackings on the line that bind as many names, the one
whose value surely fails is said; none or several, and nothing is."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from torchdoctor.introspect.source import module_tree
from torchdoctor.observe.crash.describe import MISSING, resolve, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash, Frame
from torchdoctor.rules.api.unpacking_count_mismatch import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_UNPACK = re.compile(r"^(?:too many|not enough) values to unpack \(expected (?P<expected>\d+)(?:, got (?P<got>\d+))?\)")
_SHOWN = 3  # keys of a dict named in the message


def unpacking_count_mismatch(crash: Crash, session: Holdings | None) -> Explanation | None:
    match = _UNPACK.match(crash.message) if crash.exc_type == "ValueError" else None
    frame = crash.user_frame()
    torch = torch_module()
    if match is None or frame is None or frame.live is None or torch is None:
        return None
    expected = int(match["expected"])
    said = [explanation for target, source, iterated in _unpackings(frame) if len(target.elts) == expected
            and (explanation := _explained(target, source, iterated, frame, crash, torch)) is not None]
    return said[0] if len(said) == 1 else None  # the one unpacking on the line that surely fails


def _explained(target: ast.Tuple | ast.List, source: ast.expr, iterated: bool, frame: Frame, crash: Crash,
               torch: Any) -> Explanation | None:
    value = _value(source, frame, crash)
    if value is MISSING:
        return None
    names = ", ".join(ast.unparse(element) for element in target.elts)
    fields = {"value": ast.unparse(source), "target": names, "expected": len(target.elts)}
    if iterated:
        return _iterated(value, fields, torch)
    return _unpacked(value, fields, torch)


def _unpacked(value: Any, fields: dict[str, Any], torch: Any) -> Explanation | None:
    """`a, b = value`."""
    if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape[0] != fields["expected"]:
        return Explanation(RULE, fields | {"shape": list(value.shape), "count": value.shape[0]})
    if isinstance(value, dict) and len(value) != fields["expected"]:
        return Explanation(RULE, fields | {"count": len(value), "keys": _keys(value)}, variant="dict")
    if isinstance(value, (tuple, list)) and len(value) != fields["expected"]:
        return Explanation(RULE, fields | {"count": len(value), "kind": type(value).__name__}, variant="sequence")
    return None


def _iterated(value: Any, fields: dict[str, Any], torch: Any) -> Explanation | None:
    """`for a, b in value` (or a comprehension's `for`)."""
    first = next(iter(value), None) if isinstance(value, dict) else None
    if isinstance(first, str) and len(first) != fields["expected"]:  # a key, unpacked letter by letter
        return Explanation(RULE, {"value": fields["value"], "target": fields["target"], "keys": _keys(value)},
                           variant="dict-iterated")
    if isinstance(value, torch.Tensor) and value.dim() >= 2 and value.shape[1] != fields["expected"]:
        return Explanation(RULE, fields | {"shape": list(value.shape), "row": list(value.shape[1:]), "count": value.shape[1]},
                           variant="tensor-iterated")
    return None


def _keys(value: dict[Any, Any]) -> str:
    keys = [repr(key) for key in list(value)[:_SHOWN]]
    return ", ".join(keys) + (", ..." if len(value) > _SHOWN else "")


def _unpackings(frame: Frame) -> list[tuple[ast.Tuple | ast.List, ast.expr, bool]]:
    """(target, value, iterated) of each unpacking whose names start on the frame's line: an
    assignment's, a `for` loop's, a comprehension's (its value iterated)."""
    tree = module_tree(frame.file)
    found: list[tuple[ast.Tuple | ast.List, ast.expr, bool]] = []
    for node in ast.walk(tree) if tree is not None else ():
        pairs: list[tuple[ast.expr, ast.expr, bool]] = []
        if isinstance(node, ast.Assign):
            pairs = [(target, node.value, False) for target in node.targets]
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            pairs = [(node.target, node.iter, True)]
        for target, source, iterated in pairs:
            if (isinstance(target, (ast.Tuple, ast.List)) and target.lineno == frame.line
                    and not any(isinstance(e, ast.Starred) for e in target.elts)):
                found.append((target, source, iterated))
    return found


def _value(source: ast.expr, frame: Frame, crash: Crash) -> Any:
    """What the unpacked expression holds: in the failing frame, else (a comprehension's first
    iterable, evaluated by the function around it) in the user frames outside it."""
    value = resolve(source, frame)
    if value is not MISSING or not frame.function.startswith("<"):
        return value
    outer = [f for f in crash.frames if f.file == frame.file and f is not frame and f.live is not None]
    return resolve(source, outer[-1]) if outer else MISSING


ORDER = 82
EXPLAINERS = (unpacking_count_mismatch,)
