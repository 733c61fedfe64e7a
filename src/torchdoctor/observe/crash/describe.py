"""Naming things in explanations: `x` (the user's variable), `fc.weight`, Linear `fc`.

torch is only touched when the program imported it, so explaining a crash never imports it.
"""

from __future__ import annotations

import ast
import inspect
import pickle
import re
import sys
from collections.abc import Callable, Collection, Iterator
from typing import TYPE_CHECKING, Any

from torchdoctor.core.wording import size_text  # noqa: F401 - explainers import it from here
from torchdoctor.introspect.source import module_tree
from torchdoctor.observe.crash.model import Crash, Frame

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

DTYPE_NAMES = {
    "double": "float64", "float": "float32", "half": "float16", "bfloat16": "bfloat16",
    "long": "int64", "int": "int32", "short": "int16", "byte": "uint8", "char": "int8", "bool": "bool",
    "float64": "float64", "float32": "float32", "float16": "float16", "int64": "int64", "int32": "int32",
}


def torch_module() -> Any:
    """torch, if the program imported it (None otherwise: we never import it to explain)."""
    return sys.modules.get("torch")


def dtype_name(text: str) -> str:
    """"Double", "torch.float64", "double" -> "float64"."""
    key = text.strip().lower().replace("torch.", "").replace("c10::", "").replace("tensor", "")
    return DTYPE_NAMES.get(key, key)


def tensor_dtype(tensor: Any) -> str:
    return str(tensor.dtype).replace("torch.", "")


def user_names(crash: Crash) -> dict[int, str]:
    """id(object) -> the name the user's innermost frame gives it (`x`, `self.fc.weight`)."""
    torch = torch_module()
    frame = crash.user_frame()
    names: dict[int, str] = {}
    if frame is None:
        return names
    for name, value in frame.locals.items():
        names.setdefault(id(value), name)
        if torch is not None and isinstance(value, torch.nn.Module) and name in ("self", "model"):
            for pname, param in value.named_parameters():
                names.setdefault(id(param), f"{name}.{pname}")
    return names


def module_label(module: Any, session: Holdings | None) -> str:
    """Linear `fc` (or just `Linear` when the module's name in its model is unknown)."""
    kind = type(module).__name__
    if session is None:
        return kind
    name = session.modules.name_of(module)
    return kind if name == kind else f"{kind} `{name}`"


def innermost_module(crash: Crash, kind: Any = None) -> Any:
    """The innermost `self` of the failing frames that is a module (of `kind`, if given)."""
    torch = torch_module()
    if torch is None:
        return None
    wanted = kind or torch.nn.Module
    for frame in crash.deepest():
        candidate = frame.locals.get("self")
        if isinstance(candidate, wanted):
            return candidate
    return None


def tensors_near(crash: Crash) -> Iterator[tuple[str, Any, Frame]]:
    """(name, tensor, frame) for the tensors of the failing call: the locals of the frames from
    the innermost one out to the user's, and the parameters and buffers of a module those
    frames run (`self`)."""
    torch = torch_module()
    if torch is None:
        return
    user = crash.user_frame()
    for frame in crash.deepest():
        for name, value in frame.locals.items():
            if isinstance(value, torch.Tensor):
                yield name, value, frame
            elif name == "self" and isinstance(value, torch.nn.Module):
                for pname, tensor in (*value.named_parameters(recurse=False), *value.named_buffers(recurse=False)):
                    yield f"self.{pname}", tensor, frame
        if frame is user:
            return


def describe(name: str, tensor: Any, crash: Crash, session: Holdings | None) -> str:
    """The most useful name for a tensor: the user's variable, the parameter, or the argument."""
    torch = torch_module()
    user = user_names(crash).get(id(tensor))
    if user is not None:
        return f"`{user}`"
    if torch is not None and isinstance(tensor, torch.nn.Parameter) and session is not None:
        qualified = session.modules.param_name(tensor)
        if qualified:
            return f"parameter `{qualified}`"
    if name.startswith("self.") and session is not None:
        owner = innermost_module(crash)
        if owner is not None:
            return f"{name[5:]} of {module_label(owner, session)}"
    return f"`{name}`"


def picklable(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except Exception:  # noqa: BLE001 - any failure to pickle is the answer
        return False
    return True


def function_label(value: Any) -> str:
    """`a lambda`, or the function's qualified name."""
    if getattr(value, "__name__", None) == "<lambda>":
        return "a lambda"
    return f"`{getattr(value, '__qualname__', None) or type(value).__name__}`"


#: what `resolve` gives for a name it cannot read
MISSING = object()


def resolve(expr: ast.expr, frame: Frame) -> Any:
    """What a dotted name (`model`, `self.net`) holds in the frame, reading attributes without
    running the user's code (no properties; a module's registered children); MISSING when
    unknown (None may be what it holds)."""
    if isinstance(expr, ast.Name):
        live = frame.live
        for space in (frame.locals, live.f_globals if live is not None else {}):
            if expr.id in space:
                return space[expr.id]
        return MISSING
    if not isinstance(expr, ast.Attribute):
        return MISSING
    owner = resolve(expr.value, frame)
    if owner is MISSING:
        return MISSING
    held = vars(owner).get(expr.attr, MISSING) if hasattr(owner, "__dict__") else MISSING
    if held is MISSING:
        for registry in ("_modules", "_parameters", "_buffers"):
            held = (getattr(owner, "__dict__", {}).get(registry) or {}).get(expr.attr, MISSING)
            if held is not MISSING:
                break
    if held is MISSING:
        try:
            held = inspect.getattr_static(owner, expr.attr)
        except AttributeError:
            return MISSING
        if callable(held) or isinstance(held, (property, staticmethod, classmethod)):
            return MISSING
    return held


#: "'Net' object has no attribute 'fc2'": the type and the attribute asked of it
NO_ATTRIBUTE = re.compile(r"^'(?P<type>\w+)' object has no attribute '(?P<attribute>\w+)'")


def asked_of(frame: Frame, attribute: str, accept: Callable[[Any], bool]) -> dict[str, tuple[ast.expr, Any]]:
    """The values `.attribute` is asked of on the frame's line that `accept` takes, by the text
    of the variable or attribute chain that holds them (read without running the user's code)."""
    held: dict[str, tuple[ast.expr, Any]] = {}
    for node in line_nodes(frame):
        if isinstance(node, ast.Attribute) and node.attr == attribute:
            value = resolve(node.value, frame)
            if value is not MISSING and accept(value):
                held[ast.unparse(node.value)] = (node.value, value)
    return held


def line_nodes(frame: Frame) -> list[ast.AST]:
    """The syntax nodes of the frame's file that start on its current line."""
    tree = module_tree(frame.file)
    return [n for n in ast.walk(tree) if getattr(n, "lineno", None) == frame.line] if tree is not None else []


#: the methods that reshape a tensor
_RESHAPES = frozenset({"view", "reshape"})


def reshaped_on_line(frame: Frame, size: int) -> list[tuple[ast.Call, ast.expr, Any]]:
    """(call, receiver, tensor) of each `x.view(...)`, `x.reshape(...)` or `torch.reshape(x, ...)`
    on the frame's line whose `x` (a variable or attribute) holds a tensor of `size` elements."""
    torch = torch_module()
    found = []
    for node in line_nodes(frame):
        receiver = _reshaped(node)
        value = resolve(receiver, frame) if receiver is not None else MISSING
        if isinstance(node, ast.Call) and receiver is not None and isinstance(value, torch.Tensor) and value.numel() == size:
            found.append((node, receiver, value))
    return found


def _reshaped(node: ast.AST) -> ast.expr | None:
    """The tensor `x.view(...)`, `x.reshape(...)` or `torch.reshape(x, ...)` reshapes."""
    called = tensor_call(node, _RESHAPES)
    return called[1] if called is not None else None


def tensor_call(node: ast.AST, ops: Collection[str]) -> tuple[str, ast.expr, list[ast.expr]] | None:
    """(op, tensor, the other positional arguments) of `x.op(...)` or `torch.op(x, ...)`, for an
    op of `ops`: the two spellings of one tensor operation."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) or node.func.attr not in ops:
        return None
    owner, args = node.func.value, list(node.args)
    if isinstance(owner, ast.Name) and owner.id == "torch":
        if not args:
            return None
        owner = args.pop(0)
    return node.func.attr, owner, args
