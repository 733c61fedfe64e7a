"""Inside `forward`: values taken out of autograd (TD121), functional dropout that ignores
eval() (TD130).

TD121 follows the forward's activations (its tensor arguments and whatever is computed from
them or from submodule calls) and flags the cuts that feed the computation again: re-wrapping
an activation with `torch.tensor(...)`, `.data` of an activation, `h = h.detach()` (and its
chained form `h = self.layer(x).detach()` when nothing reads `x` again), and returning a
detached output. Under `torch.no_grad()` a cut is deliberate and not flagged.
"""

from __future__ import annotations

import ast

from torchdoctor.core.finding import Fix
from torchdoctor.linter.api import FILE_END, ClassInfo, Context, Scope, keyword, lint_check, may_pass
from torchdoctor.rules.grad_flow.graph_cut_in_forward import RULE as GRAPH_CUT_IN_FORWARD
from torchdoctor.rules.mode.functional_dropout_ignores_eval import RULE as FUNCTIONAL_DROPOUT_IGNORES_EVAL

_REWRAP = frozenset({"torch.tensor", "torch.as_tensor", "torch.from_numpy", "torch.Tensor", "torch.FloatTensor"})
_METADATA = frozenset({"shape", "size", "dtype", "device", "ndim", "dim", "numel", "is_cuda", "requires_grad", "layout"})
_DROPOUTS = frozenset({"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"})


def _activations(ctx: Context) -> set[str]:
    """Names holding activations computed in the current forward: results of submodule calls
    and what is computed from them. (The forward's own arguments are not counted: inputs such
    as timesteps or indices are data, and cutting them off the graph changes nothing.)"""
    store: dict[int, set[str]] = ctx.memo.setdefault(GRAPH_CUT_IN_FORWARD.code, {})
    return store.setdefault(id(ctx.scope), set())


#: calls whose result has no gradient to cut: integers, booleans, indices
_DISCRETE_FUNCTIONS = frozenset({"len", "isinstance", "type", "int", "bool", "round", "range"})
_DISCRETE_METHODS = frozenset({
    "argmax", "argmin", "argsort", "long", "int", "bool", "byte", "eq", "ne", "gt", "lt", "ge", "le", "nonzero",
    "sign", "floor", "ceil", "round", "isnan", "isinf", "isfinite", "any", "all", "count_nonzero",
})
#: `x.new_zeros(n)`: only the dtype and device of `x` are read
_NEW = frozenset({"new", "new_zeros", "new_ones", "new_empty", "new_full"})
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def _carries(node: ast.expr, names: set[str], methods: frozenset[str] = frozenset()) -> bool:
    """Does the value of `node` depend on an activation (its values, not only its shape)?
    `self.x(...)` makes one, unless `x` is one of the class's own methods (`methods`).
    Integers, booleans and indices made from an activation (`len`, `int()`, `argmax`,
    comparisons, `.max(1)[1]`) carry no gradient, so they are not activations."""
    stack: list[ast.AST] = [node]
    while stack:
        item = stack.pop()
        cls = item.__class__
        if cls is ast.Name:
            if item.id in names:  # type: ignore[attr-defined]
                return True
            continue
        if cls is ast.Compare:
            continue
        if cls is ast.Attribute:
            if item.attr in _METADATA:  # type: ignore[attr-defined]
                continue
            if isinstance(item.value, ast.Name) and item.value.id == "self":  # type: ignore[attr-defined]
                continue  # a parameter or buffer read is not an activation
        elif cls is ast.Call:
            func = item.func  # type: ignore[attr-defined]
            if isinstance(func, ast.Name) and func.id in _DISCRETE_FUNCTIONS:
                continue
            if isinstance(func, ast.Attribute):
                if func.attr in _DISCRETE_METHODS:
                    continue
                if func.attr in _NEW:
                    stack.extend([*item.args, *(k.value for k in item.keywords)])  # type: ignore[attr-defined]
                    continue
                if isinstance(func.value, ast.Name) and func.value.id == "self" and func.attr not in methods:
                    return True  # a submodule call makes an activation
        elif cls is ast.Subscript and _indices(item):  # type: ignore[arg-type]
            continue
        elif cls in _COMPREHENSIONS:
            if _comprehension_carries(item, names, methods):  # type: ignore[arg-type]
                return True
            continue
        stack.extend(ast.iter_child_nodes(item))
    return False


def _indices(node: ast.Subscript) -> bool:
    """`x.max(1)[1]`, `x.topk(k)[1]`: the indices of a max, sort or top-k."""
    value = node.value
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr in ("max", "min", "topk", "sort", "kthvalue", "mode")
            and isinstance(node.slice, ast.Constant) and node.slice.value == 1)


def _comprehension_carries(node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
                           names: set[str], methods: frozenset[str]) -> bool:
    """A comprehension's items carry an activation when they are computed from one: its loop
    variables hold activations only when what they iterate does (`[t.shape[0] for t in tokens]`
    is a list of sizes)."""
    inner = set(names)
    for generator in node.generators:
        targets = {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
        if _carries(generator.iter, inner, methods):
            inner |= targets
        else:
            inner -= targets
    results = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
    return any(_carries(r, inner, methods) for r in results)


def _methods(ctx: Context) -> frozenset[str]:
    return ctx.class_info.methods if ctx.class_info is not None else frozenset()


def _unknown_items(node: ast.Assign, ctx: Context) -> bool:
    """`feats, lengths = upsample(feats, durations)`: a helper (a function, or one of the
    class's own methods) that returns a tuple may return sizes or indices beside activations;
    its items are not known to be activations. (A submodule's or torch function's are.)"""
    value = node.value
    if not isinstance(value, ast.Call) or not any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets):
        return False
    func = value.func
    if isinstance(func, ast.Name):
        return not (ctx.qualified(func) or "").startswith("torch.")
    return (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
            and func.attr in _methods(ctx))


@lint_check(GRAPH_CUT_IN_FORWARD, ast.Assign)
def track_activations(node: ast.Assign, ctx: Context) -> None:
    if not ctx.in_forward:
        return
    names = _activations(ctx)
    carries = _carries(node.value, names, _methods(ctx)) and not _unknown_items(node, ctx)
    for target in node.targets:
        for item in ast.walk(target):
            if isinstance(item, ast.Name):
                (names.add if carries else names.discard)(item.id)
    if ctx.grad_disabled or ctx.conditions or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
        return  # under an `if`, a detach is an option the author chose (e.g. `if freeze_embeddings:`)
    value = node.value
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "detach"):
        return
    detached = value.func.value
    if isinstance(detached, ast.Name):  # `h = h.detach()`: the main path itself is cut
        if detached.id == node.targets[0].id and detached.id in names:
            ctx.report(GRAPH_CUT_IN_FORWARD, value, fields={"call": ctx.text(value)})
    elif _carries(detached, names, _methods(ctx)) and _main_path(node, detached, ctx):
        ctx.report(GRAPH_CUT_IN_FORWARD, value, fields={"call": ctx.text(value)})


def _main_path(node: ast.Assign, detached: ast.expr, ctx: Context) -> bool:
    """`out = self.layer1(x).detach()`: the chained form of `h = h.detach()`. The cut is on the
    main path when what fed the detached value is never used again after this line (no
    residual, no second branch reads it): the only way on is through the detached copy. A
    stop-gradient target (`target = self.teacher(x).detach()` beside `self.student(x)`) reads
    its input again and is left alone. (Only this function is read, and only for these rare
    assignments.)"""
    upstream = {n.id for n in ast.walk(detached) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
               and n.func.value.id == "self" for n in ast.walk(detached)):
        return False  # only a layer's output: a cut of the model's own computation
    function = ctx.function
    if function is None:
        return False
    target = node.targets[0].id  # type: ignore[attr-defined]
    later = [n for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
             and (n.lineno, n.col_offset) > (node.end_lineno, node.end_col_offset)]
    return any(n.id == target for n in later) and not any(n.id in upstream - {target, "self"} for n in later)


@lint_check(GRAPH_CUT_IN_FORWARD, ast.Return)
def detached_output(node: ast.Return, ctx: Context) -> None:
    value = node.value
    if not ctx.in_forward or ctx.grad_disabled or value is None:
        return
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "detach"
            and _carries(value.func.value, _activations(ctx), _methods(ctx))):
        ctx.report(GRAPH_CUT_IN_FORWARD, value, fields={"call": ctx.text(value)}, variant="detached-output")


#: dtypes without gradients: a tensor of counts, sizes or masks has nothing to cut
_DISCRETE_DTYPES = frozenset({
    "torch.int8", "torch.int16", "torch.int32", "torch.int64", "torch.uint8", "torch.uint16", "torch.uint32",
    "torch.uint64", "torch.long", "torch.int", "torch.short", "torch.bool",
})


def _discrete_result(node: ast.Call, ctx: Context) -> bool:
    """`torch.tensor(sizes, dtype=torch.int64)`, `torch.tensor(lengths).long()`: an integer tensor."""
    dtype = keyword(node, "dtype")
    if dtype is not None and ctx.qualified(dtype) in _DISCRETE_DTYPES:
        return True
    parent = ctx.parent
    return isinstance(parent, ast.Attribute) and parent.value is node and parent.attr in _DISCRETE_METHODS


@lint_check(GRAPH_CUT_IN_FORWARD, ast.Call, names={"tensor", "as_tensor", "from_numpy", "Tensor", "FloatTensor"})
def rewrapped_activation(node: ast.Call, ctx: Context) -> None:
    if not ctx.in_forward or ctx.grad_disabled or not node.args or _discrete_result(node, ctx):
        return
    if ctx.qualified(node.func) in _REWRAP and _carries(node.args[0], _activations(ctx), _methods(ctx)):
        ctx.report(GRAPH_CUT_IN_FORWARD, node, fields={"call": ctx.text(node)})


#: tensor methods that compute on the values: `h.data.view(...)` still feeds the model
_VALUE_OPS = frozenset({
    "view", "reshape", "squeeze", "unsqueeze", "flatten", "contiguous", "float", "double", "half", "bfloat16", "to",
    "cuda", "clone", "permute", "transpose", "t", "expand", "expand_as", "view_as", "reshape_as", "repeat", "mean",
    "sum", "add", "sub", "mul", "div", "matmul", "mm", "bmm", "exp", "log", "pow", "sqrt", "abs", "neg", "clamp",
    "relu", "sigmoid", "tanh", "softmax", "log_softmax", "chunk", "split", "narrow", "masked_fill", "index_select",
    "gather",
})


def _feeds_computation(node: ast.Attribute, ctx: Context) -> bool:
    """`h.data` is used as a value of the model's computation (assigned, computed on, passed to
    a layer or a torch function, returned), not read for logging (`{"loss": loss.data}`), for
    indices (`h.data.max(1)[1]`), for a dtype (`h.data.new(...)`) or changed in place
    (`h.data.masked_fill_(...)`)."""
    parent = ctx.parent
    if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.BinOp, ast.UnaryOp, ast.Return)):
        return True
    if isinstance(parent, ast.Subscript):
        return parent.value is node
    if isinstance(parent, ast.Attribute):
        return parent.attr in _VALUE_OPS
    if isinstance(parent, ast.Call) and parent.func is not node:
        func = parent.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            return func.attr not in _methods(ctx)  # handed to a submodule
        return (ctx.qualified(func) or "").startswith("torch.")
    return False


@lint_check(GRAPH_CUT_IN_FORWARD, ast.Attribute, names={"data"})
def data_of_activation(node: ast.Attribute, ctx: Context) -> None:
    if not isinstance(node.ctx, ast.Load) or not ctx.in_forward or ctx.grad_disabled:
        return
    if _feeds_computation(node, ctx) and _carries(node.value, _activations(ctx), _methods(ctx)):
        ctx.report(GRAPH_CUT_IN_FORWARD, node, fields={"call": ctx.text(node)})


def _guarded_by_training(ctx: Context) -> bool:
    """Inside `if self.training ...:`: the default `training=True` is then exactly right."""
    for condition in ctx.conditions:
        for node in ast.walk(condition.test):
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                break  # `if not self.training:` says the opposite
            if isinstance(node, ast.Attribute) and node.attr == "training":
                return True
    return False


def _method(ctx: Context) -> str | None:
    """The method of the enclosing class the current code belongs to (through nested functions)."""
    scope: Scope | None = ctx.scope
    while scope is not None and scope.cls is None:
        scope = scope.parent
    if scope is None or scope.cls is not ctx.class_info:
        return None
    return scope.name.rpartition(".")[2]


def _forward_like(method: str) -> bool:
    """`forward`, `forward_features`, `_forward_impl`: the module's computation itself."""
    return "forward" in method


@lint_check(FUNCTIONAL_DROPOUT_IGNORES_EVAL, ast.Call, names=_DROPOUTS)
def functional_dropout_ignores_eval(node: ast.Call, ctx: Context) -> None:
    info = ctx.class_info
    method = _method(ctx) if info is not None else None
    if info is None or method is None:
        return
    name = ctx.qualified(node.func) or ""
    if name.rpartition(".")[0] != "torch.nn.functional" or may_pass(node, "training", 2):
        return
    if not (info.is_module or "forward" in info.methods) or _guarded_by_training(ctx):
        return
    if ctx.grad_disabled and not _forward_like(method):
        return  # a sampling or inference method under no_grad: dropout there is asked for, not inherited
    fix = None
    if "self" in ctx.scope.params:
        fix = Fix(title="Pass `training=self.training`", edits=(ctx.add_keyword(node, "training=self.training"),))
    if _forward_like(method):
        ctx.report(FUNCTIONAL_DROPOUT_IGNORES_EVAL, node, fields={"call": ctx.text(node.func)}, fix=fix)
    else:
        ctx.memo.setdefault(FUNCTIONAL_DROPOUT_IGNORES_EVAL.code, []).append((info, method, node, fix))


@lint_check(FUNCTIONAL_DROPOUT_IGNORES_EVAL, FILE_END)
def dropout_in_methods_forward_calls(tree: ast.Module, ctx: Context) -> None:
    """A dropout in another method counts only when forward() runs it (`self.block(x)` ->
    `def block`): methods that sample, generate or post-process are not the module's forward."""
    reachable: dict[int, set[str]] = {}
    for info, method, node, fix in ctx.memo.get(FUNCTIONAL_DROPOUT_IGNORES_EVAL.code, []):
        if id(info) not in reachable:
            reachable[id(info)] = _called_from_forward(info, ctx)
        if method in reachable[id(info)]:
            call = ctx.text(node.func)
            ctx.report(FUNCTIONAL_DROPOUT_IGNORES_EVAL, node, fields={"call": call, "method": method}, fix=fix,
                       variant="called-by-forward")


def _called_from_forward(info: ClassInfo, ctx: Context) -> set[str]:
    """The methods of `info` that its forward-like methods call through `self.`, transitively."""
    calls: dict[str, set[str]] = {}
    for scope in ctx.scopes:
        owner: Scope | None = scope
        while owner is not None and owner.cls is None:
            owner = owner.parent
        if owner is None or owner.cls is not info:
            continue
        method = owner.name.rpartition(".")[2]
        calls.setdefault(method, set()).update(
            (e.receiver or "")[5:] for e in scope.events if e.name == "call" and (e.receiver or "").startswith("self."))
    found: set[str] = set()
    todo = [m for m in calls if _forward_like(m)]
    while todo:
        for callee in calls.get(todo.pop(), ()):
            if callee not in found and callee in info.methods:
                found.add(callee)
                todo.append(callee)
    return found
