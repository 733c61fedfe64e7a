"""Where the value that crashed was made: the user's line that converted it, read from the source.

A crash is raised where a bad value is used (a layer's forward), but the line to change is
where it was made (`data = data.double()` in the training loop). Walking the failing frames
outward, the outermost user frame whose variables still hold the very tensor (identity, never
`==`: nothing the user wrote runs) is where it was bound. The last binding of that name before
the frame's line is read from the function's source; it counts only when it runs on every path
to that line (same block or an enclosing one) and no later binding in an enclosing loop could
have made the value instead. A parameter with no binding before the line came from the caller:
the argument of the call the caller's frame was making. The value expression is then followed
through operations that keep what matters (`.to(device)`, `.view(...)`, indexing) to the one
that made it, as a `Maker` decides. When anything is unsure the answer is None: never guess.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torchdoctor.core.locate import display_path, is_user_file
from torchdoctor.introspect.source import module_tree, own_nodes, scope_of
from torchdoctor.observe.crash.describe import torch_module
from torchdoctor.observe.crash.model import Crash, Frame
from torchdoctor.observe.crash.ops import expression_at


@dataclass(frozen=True)
class Origin:
    """The user's line that made the value, and the expression there (`data.double()`)."""

    file: str
    line: int
    text: str

    @property
    def place(self) -> str:
        return f"{display_path(self.file)}:{self.line}"


#: A maker looks at one expression (with a way to read the names it uses): True when it made
#: the value, False when it made something else (stop: unsure), an expression to look into
#: instead, or None when it is no maker (the operations that keep the value are then followed).
Resolve = Callable[[ast.expr], Any]
Maker = Callable[[ast.expr, Resolve], "bool | ast.expr | None"]

#: methods that keep a tensor's dtype and values (a new view, copy, or place)
KEEPING = frozenset({
    "view", "reshape", "cuda", "cpu", "contiguous", "unsqueeze", "squeeze", "permute", "transpose", "flatten",
    "clone", "detach", "requires_grad_", "pin_memory", "t", "expand", "view_as", "reshape_as", "expand_as",
    "unsqueeze_", "squeeze_", "detach_", "narrow", "select", "flip", "movedim", "unflatten", "share_memory_",
})

_UNKNOWN = object()


def origin_of(crash: Crash, tensor: Any, maker: Maker) -> Origin | None:
    """The user's line that made `tensor` (the failing call's offending argument), or None."""
    frames = [frame for frame in crash.frames if frame.live is not None]
    users = [index for index, frame in enumerate(frames) if is_user_file(frame.file)]
    for index in users:  # outermost first: the first that holds it is the outermost holder
        names = [name for name, value in frames[index].locals.items() if value is tensor]
        if names:
            found = {_traced(frames, users, index, name, maker) for name in names}
            return found.pop() if len(found) == 1 else None
    return None


def _traced(frames: list[Frame], users: list[int], index: int, name: str, maker: Maker, line: int | None = None,
            hops: int = 8) -> Origin | None:
    """Where the value `name` holds at `line` (default: the frame's) of frame `index` was made."""
    frame = frames[index]
    bound = _binding(frame, name, frame.line if line is None else line)
    found: Origin | ast.Name | None = None
    if isinstance(bound, ast.expr):
        found = _made(bound, frame, maker, absolute=True)
        if isinstance(found, ast.Name) and hops:  # `x = x.view(...)`: what `x` held before this line
            return _traced(frames, users, index, found.id, maker, found.lineno, hops - 1)
    elif bound == "parameter":
        outer = [i for i in users if i < index]
        if not outer or not _direct_call(frames[outer[-1] + 1:index], frame):
            return None
        argument = _argument(frames[outer[-1]], frame, name)
        found = _made(argument, frames[outer[-1]], maker, absolute=False) if argument is not None else None
        if isinstance(found, ast.Name) and hops:  # `model(x.view(...))`: what the caller's `x` held
            return _traced(frames, users, outer[-1], found.id, maker, None, hops - 1)
    return found if isinstance(found, Origin) else None


def _made(expr: ast.expr, frame: Frame, maker: Maker, *, absolute: bool) -> Origin | ast.Name | None:
    """Follow `expr` to the node that made the value (its line is the node's own when `expr`
    comes from the file's tree, else the frame's: an expression parsed on its own), or to the
    name whose value it keeps; None when unsure."""
    resolve = _resolver(frame)
    node: ast.expr | None = expr
    for _ in range(32):
        if node is None:
            return None
        said = maker(node, resolve)
        if said is True:
            line = node.lineno if absolute else frame.line
            text = _segment(frame.file, node) if absolute else ast.unparse(node)
            return Origin(frame.file, line, text)
        if said is False:
            return None
        if isinstance(node, ast.Name):
            return node
        node = said if isinstance(said, ast.expr) else _kept(node)
    return None


def _kept(node: ast.expr) -> ast.expr | None:
    """The operand of an operation that keeps the value (`x.view(...)`, `x[...]`), else None."""
    if isinstance(node, ast.Subscript):
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in KEEPING:
        return node.func.value
    return None


def _segment(filename: str, node: ast.expr) -> str:
    text = ast.get_source_segment("".join(linecache.getlines(filename)), node)
    return " ".join(text.split()) if text else ast.unparse(node)


def made_here(origin: Origin, what: str, crash: Crash) -> str:
    """`; made float64 at main.py:41 (`data.double()`), crashes at model.py:21`: the origin the
    finding points at, with the crash's own line kept in the message."""
    return f"; {what} at {origin.place} (`{origin.text}`){crashes_at(crash)}"


def crashes_at(crash: Crash) -> str:
    """`, crashes at model.py:21`: the crash's own line, for a finding placed elsewhere."""
    frame = crash.user_frame()
    return f", crashes at {display_path(frame.file)}:{frame.line}" if frame is not None else ""


# --- the binding of a name before a line -----------------------------------------------------------


def binding_of(frame: Frame, name: str, line: int) -> ast.expr | str | None:
    """The value expression of the last binding of `name` before `line` in the frame's function,
    when it surely made the value the name holds there (see `_binding`)."""
    return _binding(frame, name, line)


def made_fields(frame: Frame, name: str | None, of: type[ast.expr] = ast.expr) -> dict[str, Any]:
    """`made` (the expression that made what the variable `name` holds at the frame's line) and
    its `line`, for a message's "made" variant; empty when `name` is None or no binding of kind
    `of` surely made it."""
    made = binding_of(frame, name, frame.line) if name is not None else None
    return {"made": ast.unparse(made), "line": made.lineno} if isinstance(made, of) else {}


def _binding(frame: Frame, name: str, line: int) -> ast.expr | str | None:
    """The value expression of the last binding of `name` before `line`, when it
    surely made the value the name holds there; "parameter" when the name is a parameter not
    rebound before the line; None when unsure."""
    live = frame.live
    tree = module_tree(frame.file) if live is not None else None
    scope = scope_of(tree, live.f_code) if tree is not None and live is not None else None
    if scope is None:
        return None
    nodes = list(own_nodes(scope))
    if any(isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names for node in nodes):
        return None
    parents = {child: node for node in (scope, *nodes) for child in ast.iter_child_nodes(node)}
    current = _statement_at(nodes, line, parents)
    if current is None:
        return None
    bindings = _bindings(nodes, name)
    before = [b for b in bindings if _precedes(b[0], current, parents)]
    loops = [node for node in _ancestors(current, parents) if isinstance(node, (ast.For, ast.AsyncFor, ast.While))]
    if any(b[0].lineno > current.end_lineno and any(_within(b[0], loop, parents) for loop in loops)  # type: ignore[operator]
           for b in bindings):
        return None  # a later iteration's value may be the one
    if not before:
        arguments = getattr(scope, "args", None)
        if arguments is not None and name in {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}:
            return "parameter" if not any(b[0].lineno < current.lineno for b in bindings) else None
        return None
    statement, value = max(before, key=lambda b: (b[0].lineno, b[0].col_offset))
    if any(b[0].lineno < current.lineno and b[0] is not statement and b[0].lineno >= statement.lineno for b in bindings
           if not _precedes(b[0], current, parents)):
        return None  # a later binding on another path (an `if` branch) may be the one
    return value


def _bindings(nodes: list[ast.AST], name: str) -> list[tuple[ast.stmt, ast.expr | None]]:
    """(statement, value expression or None when not readable) for each binding of `name`."""
    found: list[tuple[ast.stmt, ast.expr | None]] = []
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                found.extend((node, value) for value in _values(target, node.value, name))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name) and node.target.id == name:
            found.append((node, node.value if isinstance(node, ast.AnnAssign) else _augmented(node, name)))
        elif isinstance(node, (ast.For, ast.AsyncFor)) and _names(node.target, name):
            found.append((node, None))
        elif isinstance(node, (ast.With, ast.AsyncWith)) and any(
                item.optional_vars is not None and _names(item.optional_vars, name) for item in node.items):
            found.append((node, None))
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name.split(".")[0]) == name for a in node.names):
            found.append((node, None))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            found.append((node, None))
        elif isinstance(node, ast.Delete) and any(_names(t, name) for t in node.targets):
            found.append((node, None))
        elif (isinstance(node, ast.NamedExpr) and node.target.id == name) or (isinstance(node, ast.ExceptHandler) and node.name == name):
            found.append((_marker(node), None))
    return found


def _values(target: ast.expr, value: ast.expr | None, name: str) -> list[ast.expr | None]:
    if isinstance(target, ast.Name):
        return [value] if target.id == name else []
    if isinstance(target, (ast.Tuple, ast.List)):
        pairs = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) and not any(
            isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))
        found: list[ast.expr | None] = []
        for position, element in enumerate(target.elts):
            inner = value.elts[position] if pairs and isinstance(value, (ast.Tuple, ast.List)) else None
            found.extend(_values(element.value if isinstance(element, ast.Starred) else element, inner, name))
        return found
    return []


def _augmented(node: ast.AugAssign, name: str) -> ast.expr:
    """`y += 1` as the expression it binds, `y + 1` (with the statement's position)."""
    made = ast.BinOp(left=ast.Name(id=name, ctx=ast.Load()), op=node.op, right=node.value)
    return ast.copy_location(made, node)


def _names(target: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target))


def _marker(node: ast.AST) -> ast.stmt:
    """A walrus or an except clause, as a statement on its line that never runs before another
    (so it only ever makes a binding unsure)."""
    return ast.copy_location(ast.Pass(), node)


def _statement_at(nodes: list[ast.AST], line: int, parents: dict[ast.AST, ast.AST]) -> ast.stmt | None:
    """The innermost statement running at `line` (a compound statement's header: itself)."""
    around = [n for n in nodes if isinstance(n, ast.stmt) and n.lineno <= line <= (n.end_lineno or n.lineno)]
    return max(around, key=lambda n: len(_ancestors(n, parents)), default=None)


def _ancestors(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> list[ast.AST]:
    chain = []
    while node in parents:
        node = parents[node]
        chain.append(node)
    return chain


def _within(node: ast.AST, outer: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    return outer in _ancestors(node, parents)


def _precedes(binding: ast.stmt, current: ast.stmt, parents: dict[ast.AST, ast.AST]) -> bool:
    """True when `binding` runs on every path to `current` just before it: it stands earlier in
    the same block as `current` or one of its enclosing statements, or is the `for`/`with`
    whose body holds `current`."""
    if isinstance(binding, (ast.For, ast.AsyncFor)):
        return any(_within(current, b, parents) or current is b for b in binding.body)
    if isinstance(binding, (ast.With, ast.AsyncWith)):
        return _within(current, binding, parents)
    if binding not in parents or binding.lineno >= current.lineno:
        return False
    block = _block_of(binding, parents)
    if block is None:
        return False
    later = block[block.index(binding) + 1:]
    return any(statement is current or _within(current, statement, parents) for statement in later)


def _block_of(statement: ast.stmt, parents: dict[ast.AST, ast.AST]) -> list[ast.stmt] | None:
    parent = parents[statement]
    for field in ("body", "orelse", "finalbody", "handlers"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and any(s is statement for s in block):
            return block
    return None


# --- from a parameter to the caller's argument ------------------------------------------------------

#: torch's frames between `model(x)` and `forward(self, x)` (`inner` when global hooks are on)
_MODULE_CALL = ("_call_impl", "_wrapped_call_impl", "inner")


def passed_in(crash: Crash, frame: Frame, name: str, hops: int = 8) -> tuple[Frame, ast.expr] | None:
    """Where the parameter `name` of the user's `frame` entered the chain of calls: the outermost
    user frame whose call passed it (handed on unchanged as a parameter by the frames between)
    and the argument expression there; None when `name` is not a parameter the frame left
    unbound before its line, or a call between is not direct."""
    frames = [f for f in crash.frames if f.live is not None]
    found: tuple[Frame, ast.expr] | None = None
    while hops and frame in frames and _binding(frame, name, frame.line) == "parameter":
        index = frames.index(frame)
        callers = [i for i in range(index) if is_user_file(frames[i].file)]
        if not callers or not _direct_call(frames[callers[-1] + 1:index], frame):
            break
        caller = frames[callers[-1]]
        argument = _argument(caller, frame, name)
        if argument is None:
            break
        found = (caller, argument)
        if not isinstance(argument, ast.Name):
            break
        frame, name, hops = caller, argument.id, hops - 1
    return found


def _direct_call(between: list[Frame], callee: Frame) -> bool:
    """The caller's call reached `callee` directly, or through `nn.Module.__call__` of a module
    without forward pre-hooks that could replace the arguments (torchdoctor's own only read them)."""
    if not between:
        return True
    if not all(f.function in _MODULE_CALL and f.file.replace("\\", "/").endswith("torch/nn/modules/module.py") for f in between):
        return False
    torch = torch_module()
    module = callee.locals.get("self")
    if torch is None or not isinstance(module, torch.nn.Module) or module._forward_pre_hooks:
        return False
    hooks = torch.nn.modules.module._global_forward_pre_hooks.values()
    return all(str(getattr(hook, "__module__", "")).startswith("torchdoctor.") for hook in hooks)


def _argument(caller: Frame, callee: Frame, name: str) -> ast.expr | None:
    """The caller's argument expression that became the callee's parameter `name`."""
    call = expression_at(caller)
    code = callee.live.f_code if callee.live is not None else None
    if not isinstance(call, ast.Call) or code is None:
        return None
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    positional = code.co_varnames[:code.co_argcount]
    if name not in positional or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    skip = 1 if positional and positional[0] in ("self", "cls") else 0
    position = positional.index(name) - skip
    return call.args[position] if 0 <= position < len(call.args) else None


# --- reading names without running the user's code --------------------------------------------------


def _resolver(frame: Frame) -> Resolve:
    namespace: dict[str, Any] = {**vars(builtins), **(frame.live.f_globals if frame.live else {}), **frame.locals}

    def resolve(node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return namespace.get(node.id, _UNKNOWN)
        if isinstance(node, ast.Attribute):
            owner = resolve(node.value)
            if owner is _UNKNOWN:
                return _UNKNOWN
            try:
                found = inspect.getattr_static(owner, node.attr)
            except AttributeError:
                return _UNKNOWN
            if isinstance(found, (property, types.MemberDescriptorType, types.GetSetDescriptorType, types.FunctionType)):
                return _UNKNOWN
            return found
        return _UNKNOWN

    return resolve


# --- makers --------------------------------------------------------------------------------------

#: tensor methods that convert to one dtype
METHOD_DTYPES = {"double": "float64", "float": "float32", "half": "float16", "bfloat16": "bfloat16", "long": "int64",
                 "int": "int32", "short": "int16", "char": "int8", "byte": "uint8", "bool": "bool"}
#: torch functions that make a tensor, of the `dtype=` given (or, for the first three, of the data's)
_FACTORIES = frozenset({"tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "rand", "randn", "randint",
                        "arange", "linspace", "eye", "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like"})
#: keywords of `.to()` that do not change the dtype
_TO_OPTIONS = frozenset({"non_blocking", "copy", "memory_format"})


def converts_to(dtype: str) -> Maker:
    """The maker of a tensor of `dtype` ("float64"): a conversion (`.double()`, `.to(torch.float64)`,
    `.type(torch.DoubleTensor)`), a factory given `dtype=`, or `torch.from_numpy` of such an array."""

    def maker(node: ast.expr, resolve: Resolve) -> bool | ast.expr | None:
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in METHOD_DTYPES and not node.args and not node.keywords:
            return METHOD_DTYPES[func.attr] == dtype
        if isinstance(func, ast.Attribute) and func.attr in ("to", "type"):
            made = _conversion(node, resolve)
            return False if made is None else func.value if made == "" else made == dtype
        return _factory(node, resolve, dtype)

    return maker


def _conversion(call: ast.Call, resolve: Resolve) -> str | None:
    """The dtype `x.to(...)`/`x.type(...)` converts to; "" when it only moves the tensor; None when unsure."""
    torch = torch_module()
    arguments = [*call.args, *(k.value for k in call.keywords if k.arg not in _TO_OPTIONS)]
    if torch is None or not arguments or any(k.arg is None for k in call.keywords):
        return None
    made = ""
    for argument in arguments:
        value = resolve(argument)
        if isinstance(value, str) and value.startswith("torch."):
            value = inspect.getattr_static(torch, value.rsplit(".", 1)[-1], None)
        if isinstance(value, type) and type(value).__name__ == "tensortype":
            value = getattr(value, "dtype", None)  # torch.DoubleTensor
        if isinstance(value, torch.dtype):
            made = str(value).replace("torch.", "")
        elif not (isinstance(value, (torch.device, str, int)) and not isinstance(value, bool)):
            return None  # another tensor's dtype, or a name we cannot read
    return made


def _factory(call: ast.Call, resolve: Resolve, dtype: str) -> bool | None:
    torch = torch_module()
    callee = resolve(call.func)
    name = getattr(callee, "__name__", None)
    if torch is None or name not in _FACTORIES or inspect.getattr_static(torch, name, None) is not callee:
        return None
    for keyword in call.keywords:
        if keyword.arg == "dtype":
            value = resolve(keyword.value)
            return isinstance(value, torch.dtype) and str(value) == f"torch.{dtype}"
    if name in ("tensor", "as_tensor", "from_numpy") and len(call.args) == 1:
        data = resolve(call.args[0])
        numpy = sys.modules.get("numpy")
        return numpy is not None and isinstance(data, numpy.ndarray) and str(data.dtype) == dtype
    return False


def label_arithmetic(node: ast.expr, resolve: Resolve) -> bool | ast.expr | None:
    """The maker of class labels out of range: arithmetic with a number (`y + 1`, `y - 1`);
    conversions keep the labels (`(y - 1).long()`)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        return any(isinstance(side, ast.Constant) and type(side.value) in (int, float) for side in (node.left, node.right))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
            node.func.attr in METHOD_DTYPES and not node.args or node.func.attr == "to" and _conversion(node, resolve) is not None):
        return node.func.value
    return None
