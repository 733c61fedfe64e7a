"""Crashes about what a module is called with: a NumPy array, a list of numbers, a whole batch.

torch's message names an aten function and a type ("linear(): argument 'input' (position 1)
must be Tensor, not numpy.ndarray"); the live frames name the module whose forward got the
value and the user's line that passed it (the outermost user frame holding that very object).
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from typing import TYPE_CHECKING, Any

from torchdoctor.core.locate import is_own_file, is_user_file
from torchdoctor.introspect.source import module_tree, own_nodes, scope_of
from torchdoctor.observe.crash.describe import module_label, resolve, torch_module, user_names
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash, Frame
from torchdoctor.observe.crash.provenance import binding_of, crashes_at
from torchdoctor.rules.api.forward_arguments_mismatch import RULE as FORWARD_ARGUMENTS
from torchdoctor.rules.api.item_of_non_scalar import RULE as ITEM
from torchdoctor.rules.api.module_class_not_instantiated import RULE as CLASS_CALLED
from torchdoctor.rules.api.non_tensor_into_module import RULE as NON_TENSOR

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_REFUSED = re.compile(
    r"\(\): argument '\w+' \(position \d+\) must be Tensor, not (?P<type>[\w.]+)"
    r"|\(\) received an invalid combination of arguments - got \((?P<first>[\w.]+),"
    r"|'(?P<attr>numpy\.ndarray|list|tuple)' object has no attribute"
)
_KINDS = ("ndarray", "list", "tuple")
#: NumPy dtypes a layer's float32 weights need converted (ints stay: they may be class indices)
_TO_FLOAT = frozenset({"float64", "float16", "uint8", "bool"})


def non_tensor_into_module(crash: Crash, session: Holdings | None) -> Explanation | None:
    if crash.exc_type not in ("TypeError", "AttributeError"):
        return None
    match = _REFUSED.search(crash.message)
    torch = torch_module()
    if match is None or torch is None:
        return None
    said = (match["type"] or match["first"] or match["attr"]).rsplit(".", 1)[-1]
    if said not in _KINDS:
        return None
    called = _called_with(crash, torch)
    if called is None:
        return None
    module, value = called
    if type(value).__name__ != said:
        return None
    entry = _entry(crash, value)
    if entry is None:
        return None
    frame, name = entry
    fields: dict[str, Any] = {"layer": module_label(module, session), "name": name}
    at = (frame.file, frame.line)
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.ndarray):
        dtype = str(value.dtype)
        return Explanation(NON_TENSOR, fields | {"dtype": dtype, "shape": list(value.shape),
                                                 "conversion": ".float()" if dtype in _TO_FLOAT else ""}, at=at)
    if not isinstance(value, (list, tuple)) or not value:
        return None
    container = type(value).__name__
    if all(isinstance(item, torch.Tensor) for item in value):
        loaded = session is not None and bool(session.loaders.recent)  # a DataLoader's batch, (inputs, labels)
        return Explanation(NON_TENSOR, fields | {"container": container, "count": len(value),
                                                 "shapes": ", ".join(str(list(item.shape)) for item in value)},
                           at=at, variant="batch" if loaded else "tensors")
    if _numbers(value):
        return Explanation(NON_TENSOR, fields | {"container": container}, at=at, variant="list")
    return None


def _called_with(crash: Crash, torch: Any) -> tuple[Any, Any] | None:
    """(module, value): the outermost module of the failing call whose forward got, as its first
    argument, the value the innermost one got, when that value is no tensor."""
    calls: list[tuple[Any, Any]] = []
    for frame in crash.frames:
        owner = frame.locals.get("self")
        code = frame.live.f_code if frame.live is not None else None
        if isinstance(owner, torch.nn.Module) and frame.function == "forward" and code is not None and code.co_argcount >= 2:
            calls.append((owner, frame.locals.get(code.co_varnames[1])))
    if not calls or isinstance(calls[-1][1], torch.Tensor):
        return None
    value = calls[-1][1]
    return next((module, got) for module, got in calls if got is value)


def _entry(crash: Crash, value: Any) -> tuple[Frame, str] | None:
    """The outermost user frame whose variables hold `value` itself, and the variable's name."""
    for frame in crash.frames:
        if not is_user_file(frame.file):
            continue
        name = next((key for key, held in frame.locals.items() if held is value), None)
        if name is not None:
            return frame, name
    return None


def _raised_at(crash: Crash, frame: Frame) -> bool:
    """Whether the exception was raised by the frame's line itself (by a builtin it called),
    past only torchdoctor's stand-ins that passed the call on (`Tensor.item` under `run`)."""
    after = crash.frames[crash.frames.index(frame) + 1:]
    return all(is_own_file(f.file) for f in after)


def _numbers(value: Any, depth: int = 0) -> bool:
    """A (nested) list or tuple of Python numbers."""
    if isinstance(value, bool) or depth > 8:
        return False
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, (list, tuple)) and bool(value) and all(_numbers(item, depth + 1) for item in value[:64])


_FORWARD = re.compile(r"(?P<cls>\w+)\.forward\(\) (?P<what>takes (?:from \d+ to )?\d+ positional arguments?"
                      r"|missing \d+ required (?:positional|keyword-only) arguments?|got an unexpected keyword argument '(?P<keyword>\w+)')")
_INIT = re.compile(r"(?P<cls>\w+)\.__init__\(\) (?:takes \d+ positional arguments?|missing \d+ required|got an unexpected keyword argument)")


def forward_arguments(crash: Crash, session: Holdings | None) -> Explanation | None:
    """A module called with arguments its forward() cannot bind: raised by the call inside
    `nn.Module.__call__` itself (not by a call in the forward's body)."""
    if crash.exc_type != "TypeError":
        return None
    match = _FORWARD.search(crash.message)
    torch = torch_module()
    if match is None or torch is None or not crash.frames:
        return None
    inner = crash.frames[-1].locals
    module, args, kwargs, forward = inner.get("self"), inner.get("args"), inner.get("kwargs"), inner.get("forward_call")
    if not isinstance(module, torch.nn.Module) or type(module).__name__ != match["cls"] or not isinstance(args, tuple) or not callable(forward):
        return None
    kwargs = kwargs if isinstance(kwargs, dict) else {}
    try:
        signature = inspect.signature(forward)
        signature.bind(*args, **kwargs)
    except TypeError:
        pass  # the call does not fit the signature: this crash
    except ValueError:
        return None
    else:
        return None
    names = user_names(crash)
    given = ", ".join([names.get(id(a), type(a).__name__) for a in args] + [f"{k}=" for k in kwargs])
    fields: dict[str, Any] = {"layer": module_label(module, session), "signature": _parameters(signature)}
    if match["keyword"]:
        return Explanation(FORWARD_ARGUMENTS, fields | {"keyword": match["keyword"]}, variant="keyword")
    if match["what"].startswith("missing"):
        bound = signature.bind_partial(*args, **kwargs).arguments
        missing = [name for name, p in signature.parameters.items() if name not in bound and p.default is p.empty
                   and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if not missing:
            return None
        return Explanation(FORWARD_ARGUMENTS, fields | {"given": f"({given})", "missing": ", ".join(f"`{m}`" for m in missing),
                                                        "first": missing[0]}, variant="missing")
    return Explanation(FORWARD_ARGUMENTS, fields | {"count": len(args), "given": given})


def _parameters(signature: inspect.Signature) -> str:
    """`(self, x, mask=None)`: forward's parameters without their annotations."""
    shown = []
    for name, parameter in signature.parameters.items():
        prefix = "*" if parameter.kind is parameter.VAR_POSITIONAL else "**" if parameter.kind is parameter.VAR_KEYWORD else ""
        default = "" if parameter.default is parameter.empty else f"={parameter.default!r}"
        shown.append(f"{prefix}{name}{default if len(default) <= 20 else '=...'}")
    return f"({', '.join(['self', *shown])})"


def class_called(crash: Crash, session: Holdings | None) -> Explanation | None:
    """`model = Net` (or `criterion = nn.CrossEntropyLoss`) then `model(x)`: the class is called on
    the input, and its __init__ refuses it, or fails on it (a loss's __init__ asks `if
    size_average is not None`, of a tensor)."""
    match = _INIT.search(crash.message) if crash.exc_type == "TypeError" else None
    torch = torch_module()
    frame = crash.user_frame()
    if torch is None or frame is None or frame.live is None:
        return None
    cls = match["cls"] if match is not None and _raised_at(crash, frame) else _failed_in_init(crash, frame, torch)
    if cls is None:
        return None
    tree = module_tree(frame.file)
    scope = scope_of(tree, frame.live.f_code) if tree is not None else None
    if scope is None:
        return None
    namespace = {**frame.live.f_globals, **frame.locals}
    called = [node.func.id for node in own_nodes(scope) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.lineno <= frame.line <= (node.end_lineno or node.lineno) and node.args]
    found = [name for name in called if isinstance(namespace.get(name), type) and issubclass(namespace[name], torch.nn.Module)
             and namespace[name].__name__ == cls and name != cls]
    if len(found) != 1:
        return None
    name = found[0]
    bound = binding_of(frame, name, frame.line)
    at = (frame.file, bound.lineno) if isinstance(bound, ast.expr) else None
    loss = issubclass(namespace[name], torch.nn.modules.loss._Loss)
    return Explanation(CLASS_CALLED, {"name": name, "cls": cls, "crashed": crashes_at(crash) if at else ""}, at=at,
                       variant="loss" if loss else None)


def _failed_in_init(crash: Crash, frame: Frame, torch: Any) -> str | None:
    """The module class whose `__init__`, called from the user's frame itself, raised."""
    index = crash.frames.index(frame)
    inner = crash.frames[index + 1] if index + 1 < len(crash.frames) else None
    owner = inner.locals.get("self") if inner is not None and inner.function == "__init__" else None
    return type(owner).__name__ if isinstance(owner, torch.nn.Module) else None


_ITEM = re.compile(r"a Tensor with (?P<count>\d+) elements cannot be converted to Scalar")
_SCALAR = "only one element tensors can be converted to Python scalars"


def item_of_non_scalar(crash: Crash, session: Holdings | None) -> Explanation | None:
    """`.item()` (or `float(t)`, `int(t)`) of a tensor of several values, raised at the user's
    line itself: the one such call on the line is the one that failed."""
    item = _ITEM.search(crash.message)
    if item is None and _SCALAR not in crash.message:
        return None
    frame = crash.user_frame()
    torch = torch_module()
    if frame is None or frame.live is None or torch is None or not _raised_at(crash, frame):
        return None
    tree = module_tree(frame.file)
    scope = scope_of(tree, frame.live.f_code) if tree is not None else None
    scope = scope if scope is not None else tree  # a comprehension's frame: the line's nodes in the file
    if scope is None:
        return None
    on_line = [node for node in ast.walk(scope) if isinstance(node, ast.Call) and node.lineno <= frame.line <= (node.end_lineno or node.lineno)]
    if item is not None:
        calls = [(node, node.func.value) for node in on_line if isinstance(node.func, ast.Attribute) and node.func.attr == "item" and not node.args]
        count = int(item["count"])
    else:
        calls = [(node, node.args[0]) for node in on_line if isinstance(node.func, ast.Name) and node.func.id in ("float", "int", "bool")
                 and len(node.args) == 1]
        count = -1
    if len(calls) != 1:
        return None
    call, receiver = calls[0]
    if isinstance(receiver, ast.Name):  # a name can be confirmed: it holds a tensor of that many values
        value = resolve(receiver, frame)
        if not isinstance(value, torch.Tensor) or value.numel() == 1 or (count >= 0 and value.numel() != count):
            return None
        count = value.numel()
    elif count < 0:
        return None  # float(expression): nothing says how many values it had
    fields = {"call": " ".join(ast.unparse(call).split()), "expr": " ".join(ast.unparse(receiver).split())}
    if count == 0:
        return Explanation(ITEM, fields, variant="empty")
    return Explanation(ITEM, fields | {"count": count})


#: where these explainers are tried: lower first (core/plugins.py)
ORDER = 65
EXPLAINERS = (non_tensor_into_module, forward_arguments, class_called, item_of_non_scalar)
