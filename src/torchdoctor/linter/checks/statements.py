"""Statements whose result is thrown away although it was the point: a method named but not
called (TD152), a tensor moved or converted into a copy nobody keeps (TD154), a tensor computed
and dropped (TD178), the report of a non-strict `load_state_dict` (TD160)."""

from __future__ import annotations

import ast

from torchdoctor.core.finding import Fix
from torchdoctor.linter.api import FILE_END, Context, dotted, keyword, lint_check, literal, terminal
from torchdoctor.rules.api.method_not_called import RULE as METHOD_NOT_CALLED
from torchdoctor.rules.api.non_strict_load_ignored import RULE as NON_STRICT_LOAD_IGNORED
from torchdoctor.rules.api.tensor_result_discarded import RULE as TENSOR_RESULT_DISCARDED
from torchdoctor.rules.device.tensor_conversion_discarded import RULE as TENSOR_CONVERSION_DISCARDED

#: methods of modules, optimizers and tensors that do nothing unless called
_METHODS = frozenset({"eval", "train", "zero_grad", "step", "backward", "detach_", "requires_grad_", "cuda", "cpu",
                      "zero_", "update", "unscale_", "set_epoch"})
#: tensor methods that return a new tensor (the original is unchanged)
_COPYING = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "long", "int", "bool", "contiguous",
                      "pin_memory", "detach", "clone", "type"})


@lint_check(METHOD_NOT_CALLED, ast.Expr, needs_torch=False)
def method_not_called(node: ast.Expr, ctx: Context) -> None:
    value = node.value
    if isinstance(value, ast.Attribute) and value.attr in _METHODS and isinstance(value.ctx, ast.Load):
        if isinstance(value.value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
            fix = Fix(title=f"Call `{value.attr}()`", edits=(ctx.insert_after(value, "()"),))
            ctx.report(METHOD_NOT_CALLED, node, fields={"target": ctx.text(value)}, fix=fix)


@lint_check(TENSOR_CONVERSION_DISCARDED, ast.Expr, needs_torch=False)
def tensor_copy_discarded(node: ast.Expr, ctx: Context) -> None:
    call = node.value
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute) or call.func.attr not in _COPYING:
        return
    receiver = call.func.value
    if not isinstance(receiver, ast.Name):
        return
    kind = ctx.kind(receiver)
    batch = kind is not None and kind.tag == "batch" and kind.detail == "item"
    if not batch and not _made_by_torch(receiver.id, ctx):
        return
    fix = Fix(title=f"Assign the result: `{receiver.id} = {ctx.text(call)}`",
              edits=(ctx.edit(call, f"{receiver.id} = {ctx.text(call)}"),))
    ctx.report(TENSOR_CONVERSION_DISCARDED, node, fields={"call": ctx.text(call), "name": receiver.id}, fix=fix)


#: torch functions that make a new tensor: a name bound only to their results holds a tensor
_FACTORIES = frozenset({
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm",
    "arange", "linspace", "logspace", "eye", "zeros_like", "ones_like", "full_like", "empty_like", "rand_like",
    "randn_like", "randint_like", "cat", "stack", "Tensor", "FloatTensor", "DoubleTensor", "HalfTensor",
    "LongTensor", "IntTensor", "ShortTensor", "ByteTensor", "CharTensor", "BoolTensor",
})


def _makes_tensor(value: ast.expr, ctx: Context) -> bool:
    """`torch.zeros(...)`, `torch.LongTensor(...)`, `Variable(...)` (which always wraps a tensor)."""
    if not isinstance(value, ast.Call):
        return False
    name = ctx.qualified(value.func) or ""
    head, _, last = name.rpartition(".")
    return name == "torch.autograd.Variable" or (head in ("torch", "torch.cuda") and last in _FACTORIES)


def _made_by_torch(name: str, ctx: Context) -> bool:
    """Every assignment to `name` in the enclosing function (or module) is a tensor factory's
    result, and there is at least one: the name holds a tensor, never a module."""
    values = [node.value for node in ctx.assignments(name)]
    return bool(values) and all(value is not None and _makes_tensor(value, ctx) for value in values)


#: torch functions and torch.nn.functional functions that return a new tensor and change nothing
_PURE_FUNCTIONS = frozenset({
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "pow", "exp", "log", "sqrt", "rsqrt", "abs", "neg",
    "clamp", "clip", "where", "cat", "stack", "matmul", "mm", "bmm", "sigmoid", "tanh", "relu", "softmax",
    "log_softmax", "reshape", "transpose", "permute", "squeeze", "unsqueeze", "flatten", "masked_fill",
    "index_select", "gather", "scatter", "scatter_add", "normalize", "dropout", "pad", "interpolate", "gelu",
    "leaky_relu", "elu", "silu", "mean", "sum", "detach", "clone", "lerp", "addcmul", "addcdiv",
})
#: tensor methods that return a new tensor (the in-place form ends in `_`); names that other
#: common objects use for something with an effect (`set.add`, `logger.log`, `tree.expand`) are
#: left out, and `add`/`sub` count only with torch's `alpha=`
_PURE_METHODS = frozenset({
    "view", "view_as", "reshape", "permute", "transpose", "unsqueeze", "squeeze", "flatten", "clamp", "clamp_min",
    "clamp_max", "masked_fill", "masked_scatter", "index_fill", "index_add", "index_copy", "scatter_add", "mul",
    "div", "addcmul", "addcdiv", "lerp", "sigmoid", "tanh", "relu", "softmax", "log_softmax", "matmul", "bmm",
})
#: methods whose result is a new view or layout: keep it (their in-place forms, where they exist, are not the idiom)
_SHAPE_METHODS = frozenset({"view", "view_as", "reshape", "permute", "transpose", "unsqueeze", "squeeze", "flatten",
                            "softmax", "log_softmax", "matmul", "bmm"})
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Pow, ast.MatMult)


#: pure functions of `torch` whose in-place form is a tensor method (`torch.div(x, d)` -> `x.div_(d)`)
_HAS_INPLACE_METHOD = frozenset({"add", "sub", "mul", "div", "pow", "exp", "log", "sqrt", "abs", "neg", "clamp", "sigmoid",
                                 "tanh", "relu", "masked_fill", "squeeze", "unsqueeze", "transpose", "lerp", "addcmul",
                                 "addcdiv", "scatter", "scatter_add"})


@lint_check(TENSOR_RESULT_DISCARDED, ast.Expr)
def tensor_result_discarded(node: ast.Expr, ctx: Context) -> None:
    value = node.value
    if isinstance(value, ast.BinOp):
        if isinstance(value.op, _ARITHMETIC) and not _textual(value) and not _probe(node, ctx):
            target = ctx.text(value.left)
            ctx.report(TENSOR_RESULT_DISCARDED, node, fields={
                "expression": ctx.text(value), "what": "a value", "advice": f"Keep the result: `{target} = {ctx.text(value)}`"})
        return
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute) or keyword(value, "out") is not None:
        return
    method = value.func.attr
    name = ctx.qualified(value.func)
    if name is not None:
        head = name.rpartition(".")[0]
        if head not in ("torch", "torch.nn.functional") or method not in _PURE_FUNCTIONS or literal(keyword(value, "inplace")) is True:
            return
        first = ctx.text(value.args[0]) if value.args and not isinstance(value.args[0], ast.Starred) else "y"
        advice = f"Keep the result: `{first} = {ctx.text(value)}`"
        if head == "torch" and method in _HAS_INPLACE_METHOD and value.args:
            advice += f", or update in place with `{first}.{method}_(...)`"
    else:
        receiver = value.func.value
        if isinstance(receiver, ast.Name) and (receiver.id == "self" or ctx.qualified(receiver) is not None):
            return  # a method of the class itself, or a function of an imported module
        if method not in _PURE_METHODS and not (method in ("add", "sub") and keyword(value, "alpha") is not None):
            return
        if method == "view" and not value.args:
            return  # `graph.view()` (graphviz) opens a viewer; a tensor's view needs a shape
        advice = f"Keep the result: `{ctx.text(receiver)} = {ctx.text(value)}`"
        if method not in _SHAPE_METHODS:
            advice += f", or update in place with `.{method}_(...)`"
    if not _probe(node, ctx):
        ctx.report(TENSOR_RESULT_DISCARDED, node, fields={"expression": ctx.text(value), "what": "a new tensor", "advice": advice})


#: context managers that expect the block to fail or warn (pytest, unittest)
_EXPECTS_FAILURE = ("raises", "Raises", "RaisesRegex", "warns", "Warns", "WarnsRegex", "deprecated_call")


def _probe(node: ast.Expr, ctx: Context) -> bool:
    """The statement runs to see whether it fails (`try: x.view(-1)` with a handler, the block
    of `with pytest.raises(...)` / `self.assertRaises(...)`), or sits in a benchmark, which
    computes to time it."""
    if "bench" in ctx.source.path.lower():
        return True
    parent = ctx.parent
    if isinstance(parent, ast.Try):
        return node in parent.body and bool(parent.handlers)
    if isinstance(parent, (ast.With, ast.AsyncWith)):
        return any(isinstance(item.context_expr, ast.Call) and (terminal(item.context_expr.func) or "").endswith(_EXPECTS_FAILURE)
                   for item in parent.items)
    return False


def _textual(node: ast.BinOp) -> bool:
    """`"-" * 40`, `f"{a}" + b`, `[0] * n`: strings and sequences, not tensors (and no less
    useless, but not ours)."""
    return any(isinstance(side, (ast.JoinedStr, ast.List, ast.Tuple))
               or isinstance(side, ast.Constant) and isinstance(side.value, (str, bytes)) for side in (node.left, node.right))


@lint_check(NON_STRICT_LOAD_IGNORED, ast.Call, names={"load_state_dict"})
def non_strict_load(node: ast.Call, ctx: Context) -> None:
    """Every `x.load_state_dict(state, strict=False)`, with where `state` comes from."""
    if not isinstance(node.func, ast.Attribute) or literal(keyword(node, "strict")) is not False or not node.args:
        return
    given = node.args[0]
    state = ctx.kind(given)
    checkpoint = state is not None and state.tag == "checkpoint"  # read from a file, not copied from a live model
    if checkpoint and state.node is not None:  # type: ignore[union-attr]
        origin: int | None = id(state.node)  # type: ignore[union-attr]
    else:  # another state dict held in a variable (`adapter_sd`), not a copy of a live model or an edit
        origin = id(given) if isinstance(given, (ast.Name, ast.Subscript)) and state is None else None
    ignored = isinstance(ctx.parent, ast.Expr) and checkpoint and not _keys_compared_before(node, ctx)
    ctx.memo.setdefault(NON_STRICT_LOAD_IGNORED.code, []).append((ctx.scope, ctx.text(node.func.value), origin, ctx.parent if ignored else None))


def _keys_compared_before(load: ast.Call, ctx: Context) -> bool:
    """Earlier in the function, one statement reads both the state being loaded and the model's
    own `state_dict()` (directly or through a name bound to it): the keys are compared, filtered
    or reported before the load (`missing = set(model.state_dict()) - set(state)`, `for k in
    state: if k not in own: ...`), so `strict=False` is deliberate."""
    function = ctx.function
    state = load.args[0]
    while isinstance(state, (ast.Subscript, ast.Attribute)):
        state = state.value
    if function is None or not isinstance(state, ast.Name) or not isinstance(load.func, ast.Attribute):
        return False
    model = dotted(load.func.value)
    own: set[str] = set()  # names bound to the model's state dict (or its keys)
    before = [n for n in ast.walk(function) if isinstance(n, ast.stmt) and n is not function
              and (n.end_lineno or 0) < load.lineno]
    for statement in sorted(before, key=lambda n: n.lineno):
        names = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}
        reads_own = bool(names & own) or any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "state_dict"
            and dotted(n.func.value) == model for n in ast.walk(statement))
        if reads_own and isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name) and state.id not in names:
            own.add(statement.targets[0].id)  # own = model.state_dict()
        elif reads_own and state.id in names:
            return True
    return False


#: calls that check a result (pytest, unittest, torch.testing, numpy.testing)
_ASSERTIONS = frozenset({"assert_close", "assert_allclose", "assert_equal", "assert_array_equal",
                         "assert_array_almost_equal", "assertEqual", "assertTrue", "assertAlmostEqual",
                         "assertFalse", "assertIsNone", "assertNotEqual"})


@lint_check(NON_STRICT_LOAD_IGNORED, ast.Assert)
def assertion(node: ast.Assert, ctx: Context) -> None:
    _remember_check(node, ctx)


@lint_check(NON_STRICT_LOAD_IGNORED, ast.Call, names=_ASSERTIONS)
def assertion_call(node: ast.Call, ctx: Context) -> None:
    _remember_check(node, ctx)


def _remember_check(node: ast.Assert | ast.Call, ctx: Context) -> None:
    """An assertion checks a load when it names the loaded model itself (`assert
    torch.equal(model.weight, ...)`). (One on a value computed from the model may test
    something else: a Lightning test asserts on pruning buffers after a load that matched no
    key.)"""
    if NON_STRICT_LOAD_IGNORED.code not in ctx.memo:
        return  # no non-strict load before it in the file: nothing to check
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    ctx.memo.setdefault("TD160-checks", []).append((ctx.scope, node.lineno, names))


@lint_check(NON_STRICT_LOAD_IGNORED, FILE_END)
def report_ignored_loads(tree: ast.Module, ctx: Context) -> None:
    """Left alone: loads the function checks afterwards (an assertion on the model's outputs
    or weights follows), and partial loads that complement each other (`model` gets the
    adapter weights from one file and the base weights from another, both `strict=False`)."""
    loads = ctx.memo.get(NON_STRICT_LOAD_IGNORED.code, [])
    checks = ctx.memo.get("TD160-checks", [])
    for scope, target, origin, statement in loads:
        if statement is None:
            continue
        root = target.partition(".")[0]
        if any(s is scope and line > statement.lineno and root in names for s, line, names in checks):
            continue
        if any(s is scope and t == target and o is not None and o != origin for s, t, o, _ in loads):
            continue
        ctx.report(NON_STRICT_LOAD_IGNORED, statement, fields={"target": target})
