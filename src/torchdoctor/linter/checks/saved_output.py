"""TD412 from the source: inside an nn.Module's method, a name bound to the output of an op that
saves its output for backward (relu, sigmoid, tanh, exp, softmax, ...) is then changed in place
(`x += 1`, `x.mul_(2)`, `x[0] = 0`) before being bound again: backward() raises.

The walk records three events per name in the function (`saved`, `bound`, `inplace`); at the
end of the file each in-place change is compared with the binding of its name that precedes it.
"""

from __future__ import annotations

import ast

from torchdoctor.linter.api import FILE_END, Context, Event, Scope, Severity, dotted, keyword, lint_check
from torchdoctor.linter.steps import order
from torchdoctor.rules.grad_flow.saved_tensor_modified_in_place import RULE as SAVED_TENSOR_MODIFIED_IN_PLACE

#: functions whose backward reads their output (seen on torch 2.13: an in-place change of the
#: output makes backward() raise; tests/lint/test_torch_facts.py). Their input-saving cousins
#: (gelu, silu, elu, leaky_relu, hardtanh, dropout, linear, matmul, batch_norm) are left out.
SAVES_OUTPUT = frozenset({
    "torch.relu", "torch.relu_", "torch.nn.functional.relu", "torch.nn.functional.relu_",
    "torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit",
    "torch.tanh", "torch.nn.functional.tanh", "torch.exp", "torch.expm1", "torch.special.expm1",
    "torch.sqrt", "torch.rsqrt", "torch.reciprocal",
    "torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax",
    "torch.log_softmax", "torch.nn.functional.log_softmax", "torch.special.log_softmax",
    "torch.nn.functional.softmin",
})
#: the same as Tensor methods (`x.relu()`, `att.softmax(-1)`)
SAVES_OUTPUT_METHODS = frozenset({
    "relu", "sigmoid", "tanh", "exp", "expm1", "sqrt", "rsqrt", "reciprocal", "softmax", "log_softmax",
})
#: functions that save their output only when they work in place (`inplace=True`)
SAVES_OUTPUT_IN_PLACE = frozenset({f"torch.nn.functional.{name}" for name in ("elu", "selu", "celu", "leaky_relu", "rrelu")})
#: nn layers that save their output, and those that do when built with `inplace=True`
SAVING_LAYERS = frozenset({f"torch.nn.{name}" for name in ("ReLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Softmin")})
SAVING_LAYERS_IN_PLACE = frozenset({f"torch.nn.{name}" for name in ("ELU", "SELU", "CELU", "LeakyReLU", "RReLU")})
#: views that share the saved output's memory (an in-place change through them changes it)
_VIEWS = frozenset({"view", "view_as", "unsqueeze", "squeeze", "transpose", "permute", "flatten", "t"})
#: Tensor methods that change the tensor in place (the version counter backward() checks)
IN_PLACE_METHODS = frozenset({
    "add_", "sub_", "mul_", "div_", "true_divide_", "pow_", "neg_", "abs_", "exp_", "log_", "sqrt_", "clamp_",
    "clamp_min_", "clamp_max_", "clip_", "masked_fill_", "masked_scatter_", "fill_", "zero_", "copy_",
    "index_add_", "index_fill_", "index_copy_", "index_put_", "scatter_", "scatter_add_", "addcmul_", "addcdiv_",
    "lerp_", "fill_diagonal_", "nan_to_num_", "relu_", "sigmoid_", "tanh_", "floor_", "round_", "sign_",
    "uniform_", "normal_", "bernoulli_", "dropout_",
})
#: the methods that run with autograd on in training (others, such as sampling and generation,
#: often run under no_grad only: a crash there is not certain)
_FORWARD_METHODS = frozenset({"forward", "training_step", "compute_loss", "loss"})

_SAVED, _BOUND, _IN_PLACE = "TD412-saved", "TD412-bound", "TD412-inplace"


def _in_module_method(ctx: Context) -> bool:
    """A method of an nn.Module (not of an autograd.Function, whose forward runs without autograd,
    nor a staticmethod)."""
    info, function = ctx.scope.cls, ctx.function
    if info is None or function is None or not info.looks_like_module:
        return False
    if any(base.rpartition(".")[2] == "Function" for base in info.bases):
        return False
    return not any(dotted(d) == "staticmethod" for d in function.decorator_list)


def _layer_constructor(callee: ast.expr, ctx: Context) -> ast.Call | None:
    """The `nn.ReLU(...)` call that made `self.act` (or a local `act`), when it is known."""
    kind = ctx.kind(callee)
    node = kind.node if kind is not None and kind.tag == "model" else None
    return node if isinstance(node, ast.Call) else None


def _in_place_flag(call: ast.Call) -> bool:
    flag = keyword(call, "inplace")
    return isinstance(flag, ast.Constant) and flag.value is True


def _saving_op(value: ast.expr, ctx: Context) -> tuple[str, ast.expr | None] | None:
    """(the op's text, its input) when `value` is the output of an op that saves it (or a view of it)."""
    while (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _VIEWS
           and ctx.qualified(value.func) is None):
        value = value.func.value
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    qualified = ctx.qualified(func)
    first = value.args[0] if value.args else None
    if qualified in SAVES_OUTPUT or (qualified in SAVES_OUTPUT_IN_PLACE and _in_place_flag(value)):
        return f"`{ctx.text(func)}`", first
    if (qualified is None and isinstance(func, ast.Attribute) and func.attr in SAVES_OUTPUT_METHODS
            and _tensor_method_call(value)):
        return f"`.{func.attr}()`", func.value
    constructor = _layer_constructor(func, ctx) if qualified is None else None
    if constructor is not None:
        layer = ctx.qualified(constructor.func)
        if layer in SAVING_LAYERS or (layer in SAVING_LAYERS_IN_PLACE and _in_place_flag(constructor)):
            return f"`{ctx.text(func)}` ({ctx.text(constructor)})", first
    return None


def _tensor_method_call(call: ast.Call) -> bool:
    """`h.tanh()`, `att.softmax(-1)`: not `self.relu(x)` nor `self.encoder.tanh(h)` (a layer's call,
    whose input is an argument: a Tensor method of these takes at most a dim)."""
    func = call.func
    if not isinstance(func, ast.Attribute) or (isinstance(func.value, ast.Name) and func.value.id == "self"):
        return False
    return len(call.args) <= (1 if func.attr.endswith("softmax") else 0)


def _changed_in_place(value: ast.expr, ctx: Context) -> str | None:
    """The name a call changes in place: `x.mul_(2)`, `F.relu(x, inplace=True)`, `self.act(x)` with
    an `inplace=True` layer."""
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr in IN_PLACE_METHODS and isinstance(func.value, ast.Name):
        return func.value.id
    first = value.args[0] if value.args else None
    if not isinstance(first, ast.Name):
        return None
    qualified = ctx.qualified(func)
    if qualified is not None and qualified.startswith("torch.nn.functional.") and _in_place_flag(value):
        return first.id
    constructor = _layer_constructor(func, ctx) if qualified is None else None
    if constructor is not None and _in_place_flag(constructor):
        return first.id
    return None


def _is_dropout(value: ast.expr, ctx: Context) -> bool:
    """An in-place dropout changes its input only with p > 0 in training mode (seen on torch 2.13)."""
    if not isinstance(value, ast.Call):
        return False
    constructor = _layer_constructor(value.func, ctx)
    name = ctx.qualified(constructor.func if constructor is not None else value.func) or ""
    return "dropout" in name.rpartition(".")[2].lower()


def _root_name(target: ast.expr) -> str | None:
    """`x` for `x[...]` (and `x[i][j]`): the tensor an item assignment changes."""
    while isinstance(target, ast.Subscript):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def _note(ctx: Context, name: str, node: ast.AST, receiver: str, detail: object = None) -> None:
    ctx.record(name, node, receiver)  # type: ignore[arg-type]
    if detail is not None:
        ctx.memo.setdefault(SAVED_TENSOR_MODIFIED_IN_PLACE.code, {})[id(ctx.scope.events[-1])] = detail


@lint_check(SAVED_TENSOR_MODIFIED_IN_PLACE, ast.Assign)
def saved_output_bound(node: ast.Assign, ctx: Context) -> None:
    if not _in_module_method(ctx):
        return
    changed = _changed_in_place(node.value, ctx)
    if changed is not None:
        _note(ctx, _IN_PLACE, node, changed, "dropout" if _is_dropout(node.value, ctx) else None)
    for target in node.targets:
        name = _root_name(target)
        if isinstance(target, ast.Subscript) and name is not None:
            _note(ctx, _IN_PLACE, node, name)  # x[...] = v
    grade = _grade(node.value, ctx)
    for target in node.targets:
        for name_node in ast.walk(target):
            if isinstance(name_node, ast.Name) and isinstance(name_node.ctx, ast.Store):
                _remember_grade(ctx, name_node.id, grade)
    if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        saving = _saving_op(node.value, ctx)
        if saving is None or not grade:
            _note(ctx, _BOUND, node, node.targets[0].id)
        else:
            _note(ctx, _SAVED, node, node.targets[0].id, (saving[0], grade))


#: how sure it is that a value carries autograd history: made by a layer or parameter of the
#: module (`_LAYER`), or from the method's own arguments in forward() (`_ARGUMENT`: the batch itself
#: may need no gradient); a value made only of constants, detached tensors and plain arguments of
#: other methods carries none we can see (not recorded)
_LAYER, _ARGUMENT = 2, 1


def _grade(value: ast.expr, ctx: Context) -> int:
    """`_LAYER`, `_ARGUMENT` or 0 for the value an op saves: whether backward() will reach it."""
    if ctx.grad_disabled:
        return 0
    grades: dict[str, int] = ctx.memo.setdefault("TD412-grades", {}).setdefault(id(ctx.scope), {})
    forward = ctx.function is not None and ctx.function.name in _FORWARD_METHODS
    best = 0
    pending: list[ast.AST] = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("detach", "detach_"):
            continue  # cut from the graph
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            kind = ctx.kind(node)
            if kind is not None and kind.tag in ("model", "parameter"):
                return _LAYER  # self.fc(...), self.blocks[i](...), self.weight
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in grades:
                best = max(best, grades[node.id])
            elif forward and node.id in ctx.scope.params and node.id != "self":
                best = max(best, _ARGUMENT)
        pending.extend(ast.iter_child_nodes(node))
    return best


def _remember_grade(ctx: Context, name: str, grade: int) -> None:
    grades = ctx.memo.setdefault("TD412-grades", {}).setdefault(id(ctx.scope), {})
    if grade:
        grades[name] = grade
    else:
        grades.pop(name, None)


@lint_check(SAVED_TENSOR_MODIFIED_IN_PLACE, ast.AugAssign)
def augmented_in_place(node: ast.AugAssign, ctx: Context) -> None:
    name = _root_name(node.target)
    if name is not None and _in_module_method(ctx):
        _note(ctx, _IN_PLACE, node, name)  # x += 1, x[...] *= 2


@lint_check(SAVED_TENSOR_MODIFIED_IN_PLACE, ast.Expr)
def in_place_statement(node: ast.Expr, ctx: Context) -> None:
    name = _changed_in_place(node.value, ctx) if _in_module_method(ctx) else None
    if name is not None:
        _note(ctx, _IN_PLACE, node, name)  # x.mul_(2)


@lint_check(SAVED_TENSOR_MODIFIED_IN_PLACE, ast.Name, stores=True)
def other_binding(node: ast.Name, ctx: Context) -> None:
    """A name bound by a `for`, `with ... as`, a tuple target or `:=`: no longer the saved output."""
    parent = ctx.parent
    if isinstance(parent, (ast.Assign, ast.AugAssign)) or not _in_module_method(ctx):
        return
    _note(ctx, _BOUND, node, node.id)
    if isinstance(parent, (ast.For, ast.AsyncFor)):
        _remember_grade(ctx, node.id, _grade(parent.iter, ctx))  # for block in self.blocks: x = block(x)
    elif not isinstance(parent, (ast.Tuple, ast.List, ast.Starred)):  # an element of an Assign's target has its grade
        _remember_grade(ctx, node.id, 0)


@lint_check(SAVED_TENSOR_MODIFIED_IN_PLACE, FILE_END)
def report_saved_outputs_changed(tree: ast.Module, ctx: Context) -> None:
    details = ctx.memo.get(SAVED_TENSOR_MODIFIED_IN_PLACE.code, {})
    for scope in ctx.scopes:
        if scope.cls is None or scope.grad_disabled:
            continue
        for saved, change in _saved_then_changed(scope):
            if _reached_only_without_grad(scope, change, ctx):
                continue
            op, grade = details[id(saved)]
            dropout = details.get(id(change)) == "dropout"
            certain = scope.name.rpartition(".")[2] in _FORWARD_METHODS and grade == _LAYER and not dropout
            ctx.report(
                SAVED_TENSOR_MODIFIED_IN_PLACE, change.node,
                severity=None if certain else Severity.WARNING,
                variant="dropout-on-saved-output" if dropout else "saved-output",
                fields={"tensor": change.receiver, "op": op, "saved_line": saved.line},
            )


def _saved_then_changed(scope: Scope) -> list[tuple[Event, Event]]:
    """(binding, change) pairs: an in-place change whose name's latest binding saved its output."""
    latest: dict[str, Event | None] = {}
    found = []
    for event in scope.events:
        if not event.name.startswith("TD412-") or event.receiver is None:
            continue
        if event.name != _IN_PLACE:
            latest[event.receiver] = event
            continue
        binding = latest.get(event.receiver)
        if (binding is not None and binding.name == _SAVED and order(binding, event) == -1
                and not binding.grad_disabled and not event.grad_disabled):
            found.append((binding, event))
            latest[event.receiver] = None  # one finding per saved output
    return found


def _reached_only_without_grad(scope: Scope, change: Event, ctx: Context) -> bool:
    """The change runs only when autograd is off, so no graph reads the output: a helper method
    whose every caller in the class is under `no_grad` (`@torch.no_grad() def generate(self, z):
    return self._decode(z)`), or a branch under `if <flag>:` where the flag is a parameter that is
    off by default and passed on only by such callers (`@torch.no_grad() def predict(self, x):
    return self(x, hard=True)`). Code outside the file cannot be seen: `forward` itself, called
    as `model(x)` from anywhere, counts only through such a branch."""
    method = scope.name.rpartition(".")[2]
    flags = [name for name in _flags_tested(change, scope) if _off_by_default(scope, name)]
    if method == "forward" and not flags:
        return False
    callers = [e for other in ctx.scopes if other.cls is scope.cls for e in other.events
               if e.name == "call" and (e.receiver == f"self.{method}" or method == "forward" and e.receiver == "self")]
    if flags:
        callers = [e for e in callers if any(_may_turn_on(e.node, scope, flag) for flag in flags)]  # type: ignore[arg-type]
    return bool(callers) and all(e.grad_disabled for e in callers)


def _flags_tested(change: Event, scope: Scope) -> list[str]:
    """Parameters of the method that an `if` around the change tests plainly (`if hard:`, `if hard and ...:`)."""
    flags = []
    for condition in change.conditions:
        test = condition.test
        tested = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        flags += [t.id for t in tested if isinstance(t, ast.Name) and t.id in scope.params and t.id != "self"]
    return flags


def _off_by_default(scope: Scope, name: str) -> bool:
    """The parameter's default is `False`, `None` or `0`."""
    arguments = scope.node.args  # type: ignore[attr-defined]
    positional = [*arguments.posonlyargs, *arguments.args]
    pairs = list(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
    pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None]
    return any(a.arg == name and isinstance(d, ast.Constant) and not d.value for a, d in pairs)


def _may_turn_on(call: ast.Call, scope: Scope, flag: str) -> bool:
    """The call passes the flag, by keyword or position, as anything but a false constant (or may, through `**`)."""
    for kw in call.keywords:
        if kw.arg is None or kw.arg == flag:
            return not (isinstance(kw.value, ast.Constant) and not kw.value.value)
    params = [p for p in scope.params if p != "self"]
    index = params.index(flag) if flag in params else len(call.args)
    if any(isinstance(a, ast.Starred) for a in call.args[:index + 1]):
        return True
    if index < len(call.args):
        value = call.args[index]
        return not (isinstance(value, ast.Constant) and not value.value)
    return False
