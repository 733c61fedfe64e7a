"""TD203 tensor-made-off-input-device: a tensor made on the CPU inside device-portable code (a
model's method, a function that moves tensors itself) meets the function's input in an op.

The creation is recorded as the walk meets it (`torch.zeros(x.shape[0], 1)` bound to a name,
without `device=`); at the file's end each function that made one is read once: which names
follow an input (its tensor parameters and what is computed from them), and whether a made name
meets one of those in an op that needs both on one device.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from torchdoctor.introspect.source import own_nodes
from torchdoctor.linter.api import FILE_END, Context, Scope, keyword, lint_check
from torchdoctor.linter.names import dotted
from torchdoctor.rules.device.tensor_made_off_input_device import RULE

#: torch functions that make a new tensor on the default device (the CPU) unless given `device=`
SIZED = frozenset({"zeros", "ones", "full", "empty", "rand", "randn", "randint", "randperm", "arange",
                   "linspace", "logspace", "eye"})
#: ... and those that make it from data: `torch.tensor(3.0)` is 0-dim, which any device accepts
FROM_DATA = frozenset({"tensor", "as_tensor", "from_numpy", "Tensor", "FloatTensor", "DoubleTensor",
                       "LongTensor", "IntTensor", "BoolTensor", "ByteTensor", "HalfTensor"})
LEGACY = frozenset({"Tensor", "FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "BoolTensor",
                    "ByteTensor", "HalfTensor"})
#: methods that keep a tensor where it is and keep it at least 1-d
KEEPS_PLACE = frozenset({"view", "reshape", "unsqueeze", "float", "long", "int", "bool", "double", "half", "t",
                         "flip", "expand", "expand_as", "repeat", "permute", "transpose", "contiguous", "clone",
                         "detach", "fill_", "zero_", "uniform_", "normal_", "bernoulli_", "view_as", "reshape_as"})
#: what says a parameter is a tensor (numpy arrays have `shape`, `dtype`, `reshape` too, not these)
TENSOR_METHODS = frozenset({"size", "dim", "unsqueeze", "permute", "contiguous", "float", "long", "half", "bool",
                            "masked_fill", "masked_fill_", "new_zeros", "new_ones", "new_full", "new_empty",
                            "new_tensor", "to", "type_as", "detach", "numel", "softmax", "log_softmax", "clone",
                            "cuda", "expand_as", "unbind", "narrow", "index_select", "gather", "sigmoid"})
TENSOR_ATTRIBUTES = frozenset({"device", "is_cuda"})
#: torch functions whose first argument need not be a tensor
NOT_TENSOR_FIRST = SIZED | FROM_DATA | frozenset({"load", "save", "device", "manual_seed", "is_tensor", "is_floating_point",
                                          "set_grad_enabled", "Generator", "Size", "dtype", "no_grad", "compile"})
#: attributes and methods whose value is no longer the tensor (a size, a Python number, a CPU copy)
LEAVES_TENSOR = frozenset({"shape", "device", "dtype", "ndim", "is_cuda", "requires_grad", "size", "dim", "numel",
                           "item", "tolist", "cpu", "numpy", "stride", "nelement", "element_size", "get_device",
                           "data_ptr", "__len__"})
#: operators seen to need both operands on one device (a CPU tensor against a `meta` one raises:
#: tests/lint/test_tensor_made_off_input_device.py); `//` and `@` accept a mix on `meta`, so they are left out
MIXING_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.Mod, ast.BitAnd, ast.BitOr, ast.BitXor)
MIXING_COMPARISONS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
#: torch functions of several tensors seen to need them on one device
MIXING_FUNCTIONS = frozenset({"torch.cat", "torch.concat", "torch.stack", "torch.where", "torch.add", "torch.sub",
                              "torch.mul", "torch.div", "torch.maximum", "torch.minimum", "torch.eq", "torch.lt",
                              "torch.gt", "torch.le", "torch.ge", "torch.ne"})
MIXING_METHODS = frozenset({"masked_fill", "masked_fill_", "add", "sub", "mul", "div", "eq", "ne", "lt", "gt", "le",
                            "ge", "maximum", "minimum"})
#: a file that sets where factories make tensors: they may not make them on the CPU
DEFAULT_DEVICE = ("set_default_device", "set_default_tensor_type", "with torch.device(")


@dataclass(frozen=True)
class Made:
    """`name = torch.zeros(...)` (without `device=`) in a function."""

    name: str
    statement: ast.Assign
    factory: str


@lint_check(RULE, ast.Call, names=SIZED | FROM_DATA, needs_text=("device", ".cuda("))
def tensor_made_on_cpu(node: ast.Call, ctx: Context) -> None:
    """Record `name = torch.<factory>(...)` (maybe followed by `.view(...)`, `.float()`) without `device=`."""
    statement = ctx.statement
    if ctx.function is None or not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return
    target = statement.targets[0]
    qualified = ctx.qualified(node.func) or ""
    factory = qualified.rpartition(".")[2]
    if not isinstance(target, ast.Name) or qualified != f"torch.{factory}" or not _at_least_1d(node, factory):
        return
    if any(kw.arg in (None, "device", "out") for kw in node.keywords):  # `**options`; `out=` decides the place
        return
    if _made_by(statement.value) is not node:
        return
    ctx.memo.setdefault(RULE.code, []).append((ctx.scope, Made(target.id, statement, qualified)))


@lint_check(RULE, FILE_END, needs_text=("device", ".cuda("))
def tensor_meets_input(tree: ast.Module, ctx: Context) -> None:
    recorded = ctx.memo.get(RULE.code)
    if not recorded or any(text in ctx.source.text for text in DEFAULT_DEVICE):
        return
    by_scope: dict[int, tuple[Scope, list[Made]]] = {}
    for scope, made in recorded:
        by_scope.setdefault(id(scope), (scope, []))[1].append(made)
    for scope, made in by_scope.values():
        _check_function(scope, made, ctx)


def _check_function(scope: Scope, made: list[Made], ctx: Context) -> None:
    function = scope.node
    assert isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
    nodes = list(own_nodes(function))
    in_model = scope.cls is not None and scope.cls.looks_like_module
    if not in_model and not _moves_tensors(nodes):
        return  # code that never thinks of devices may well run on the CPU only
    assigned: dict[str, list[ast.expr]] = defaultdict(list)
    for node in nodes:
        for target, value in _bindings(node):
            assigned[target].append(value)
    following = _following(_tensor_parameters(function, nodes, ctx), assigned)
    anchored = _anchors(nodes)
    host = {m.name: m for m in made if len(assigned[m.name]) == 1 and m.name not in following and m.name not in anchored}
    reported: set[str] = set()
    for node in sorted(nodes, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
        for name, other in _meetings(node, host, set(following), ctx):
            if name in reported:
                continue
            reported.add(name)
            source = following[other]
            ctx.report(RULE, host[name].statement, fields={
                "name": name, "factory": host[name].factory, "input": source, "use": getattr(node, "lineno", 0),
                "other": f"the input `{other}`" if other == source else f"`{other}` (from the input `{source}`)",
            })


def _at_least_1d(call: ast.Call, factory: str) -> bool:
    """The factory makes a tensor of at least one dimension (a 0-dim CPU tensor meets any device)."""
    if factory in FROM_DATA:
        data = call.args[0] if call.args else keyword(call, "data")
        if factory in LEGACY:
            return data is not None
        if isinstance(data, (ast.List, ast.Tuple, ast.ListComp)):
            return bool(data.elts) if isinstance(data, (ast.List, ast.Tuple)) else True
        return isinstance(data, ast.Call) and (dotted(data.func) or "").startswith(("np.", "numpy."))
    if factory in ("zeros", "ones", "empty", "rand", "randn", "full"):
        size = call.args[0] if call.args else keyword(call, "size")
        return size is not None and not (isinstance(size, (ast.Tuple, ast.List)) and not size.elts)
    return True


def _made_by(value: ast.expr) -> ast.Call | None:
    """The factory call at the root of `torch.zeros(n).view(1, -1)`, through methods that keep the
    tensor where it is and at least 1-d; None when the chain moves or reduces it."""
    while True:
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in KEEPS_PLACE:
            value = value.func.value
        elif isinstance(value, ast.Subscript) and _keeps_dims(value.slice):
            value = value.value
        elif isinstance(value, ast.Call):
            return value
        else:
            return None


def _keeps_dims(index: ast.expr) -> bool:
    """`[None, :]`, `[:, 1:]`: an index that leaves a dimension (an integer index may leave none)."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(isinstance(p, ast.Slice) or (isinstance(p, ast.Constant) and p.value is None) for p in parts)


def _moves_tensors(nodes: Iterable[ast.AST]) -> bool:
    """The function itself places tensors: `.to(...)`, `.cuda()`, `device=` or `.device` somewhere."""
    for node in nodes:
        if isinstance(node, ast.Attribute) and node.attr in ("to", "cuda", "device"):
            return True
        if isinstance(node, ast.keyword) and node.arg == "device":
            return True
    return False


def _bindings(node: ast.AST) -> Iterable[tuple[str, ast.expr]]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            for name in _names(target):
                yield name, node.value
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
        yield from ((name, node.value) for name in _names(node.target))
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        yield from ((name, node.iter) for name in _names(node.target))
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        yield from ((name, node.context_expr) for name in _names(node.optional_vars))
    elif isinstance(node, ast.NamedExpr):
        yield node.target.id, node.value


def _names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _names(element)]
    if isinstance(target, ast.Starred):
        return _names(target.value)
    return []


def _takes_tensors(name: str) -> bool:
    """A torch function whose first argument is a tensor (not `torch.load(path)`, `torch.tensor(data)`)."""
    return name.startswith("torch.") and name.rpartition(".")[2] not in NOT_TENSOR_FIRST and not name.startswith(
        ("torch.jit.", "torch.cuda.", "torch.distributed.", "torch.utils.", "torch.backends."))


def _tensor_parameters(function: ast.FunctionDef | ast.AsyncFunctionDef, nodes: list[ast.AST], ctx: Context) -> list[str]:
    """The parameters the function uses as tensors: a tensor-only method or attribute, a method
    given `dim=` (NumPy says `axis=`), an argument of a torch function, a `Tensor` annotation."""
    arguments = function.args
    parameters = [a for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs) if a.arg not in ("self", "cls")]
    names = {a.arg for a in parameters}
    tensors = {a.arg for a in parameters if a.annotation is not None and (dotted(a.annotation) or "").endswith("Tensor")}
    for node in nodes:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names:
            if node.attr in TENSOR_ATTRIBUTES or node.attr in TENSOR_METHODS:
                tensors.add(node.value.id)
        elif isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in names
                    and keyword(node, "dim") is not None):
                tensors.add(func.value.id)
            elif node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in names and _takes_tensors(
                    ctx.qualified(func) or ""):
                tensors.add(node.args[0].id)
    return [a.arg for a in parameters if a.arg in tensors]


def _following(inputs: list[str], assigned: dict[str, list[ast.expr]]) -> dict[str, str]:
    """The input tensors and every name some binding computes from them (it may live where they
    do), each with the input it comes from."""
    following = {name: name for name in inputs}
    changed = bool(following)
    while changed:
        changed = False
        for name, values in assigned.items():
            if name in following:
                continue
            source = next((f for value in values if (f := _follower(value, set(following)))), None)
            if source is not None:
                following[name] = following[source]
                changed = True
    return following


def _anchors(nodes: Iterable[ast.AST]) -> set[str]:
    """Names something else is moved to: `x.to(mask.device)`, `x.type_as(mask)` put `x` beside `mask`."""
    anchors: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "type_as"):
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                anchors.update(n.id for n in ast.walk(argument) if isinstance(n, ast.Name))
    return anchors


def _carried(value: ast.AST, following: set[str]) -> str | None:
    """The name of `following` whose tensor the expression's value keeps (not only its shape, a
    number, a CPU copy), or None."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            if node.id in following:
                return node.id
            continue
        if isinstance(node, ast.Attribute) and node.attr in LEAVES_TENSOR:
            continue
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in LEAVES_TENSOR:
                continue
            if isinstance(func, ast.Name):
                continue  # `len(x)`, `count_nodes(x)`: a function of the file may return anything (a number)
            if _to_cpu(node) or _made_by(node) is node and _factory(func):
                continue  # a CPU copy; a tensor made from the input's sizes or values
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp)):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return None


def _to_cpu(call: ast.Call) -> bool:
    """`x.to("cpu")`, `x.type(torch.LongTensor)`: a copy on the CPU."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("to", "type"):
        return False
    given = [*call.args, *(k.value for k in call.keywords)]
    return any((isinstance(a, ast.Constant) and a.value == "cpu")
               or (func.attr == "type" and (dotted(a) or "").rpartition(".")[2] in LEGACY) for a in given)


def _factory(func: ast.expr) -> bool:
    name = dotted(func) or ""
    return name.startswith("torch.") and name.rpartition(".")[2] in SIZED | FROM_DATA


def _host(expr: ast.expr, host: dict[str, Made]) -> str | None:
    """The made name an operand is (`mask`, `mask.float()`, `mask[:, None]`), or None."""
    while True:
        if isinstance(expr, ast.Name):
            return expr.id if expr.id in host else None
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in KEEPS_PLACE:
            expr = expr.func.value
        elif isinstance(expr, ast.Subscript) and _keeps_dims(expr.slice):
            expr = expr.value
        elif isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
            expr = expr.operand
        else:
            return None


def _follower(expr: ast.expr, following: set[str]) -> str | None:
    """The input-following name an operand computes from, or None."""
    return None if isinstance(expr, ast.Constant) else _carried(expr, following)


def _meetings(node: ast.AST, host: dict[str, Made], following: set[str], ctx: Context) -> Iterable[tuple[str, str]]:
    """(made name, input-following name) for each pair the op at `node` needs on one device."""
    groups: list[list[ast.expr]] = []
    if isinstance(node, ast.BinOp) and isinstance(node.op, MIXING_OPERATORS):
        groups.append([node.left, node.right])
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], MIXING_COMPARISONS):
        groups.append([node.left, node.comparators[0]])
    elif isinstance(node, ast.Call):
        name = ctx.qualified(node.func) or ""
        if name in MIXING_FUNCTIONS:
            operands = list(node.args)
            if name in ("torch.cat", "torch.concat", "torch.stack") and operands and isinstance(operands[0], (ast.List, ast.Tuple)):
                operands = list(operands[0].elts)
            groups.append(operands)
        elif isinstance(node.func, ast.Attribute) and node.func.attr in MIXING_METHODS and not name.startswith("torch."):
            groups.append([node.func.value, *node.args[:1]])
    for operands in groups:
        made = [m for m in (_host(o, host) for o in operands) if m]
        others = [f for f in (_follower(o, following) for o in operands if _host(o, host) is None) if f]
        if made and others:
            yield made[0], others[0]
