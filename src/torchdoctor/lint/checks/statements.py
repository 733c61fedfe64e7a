"""Statements whose result is thrown away although it was the point: a method named but not
called (TD152), a tensor moved or converted into a copy nobody keeps (TD154), the report of a
non-strict `load_state_dict` (TD160)."""

from __future__ import annotations

import ast

from torchdoctor.core.finding import Fix
from torchdoctor.lint.api import FILE_END, Context, check, dotted, keyword, literal
from torchdoctor.rules.api.method_not_called import RULE as METHOD_NOT_CALLED
from torchdoctor.rules.api.non_strict_load_ignored import RULE as NON_STRICT_LOAD_IGNORED
from torchdoctor.rules.device.tensor_conversion_discarded import RULE as TENSOR_CONVERSION_DISCARDED

#: methods of modules, optimizers and tensors that do nothing unless called
_METHODS = frozenset({"eval", "train", "zero_grad", "step", "backward", "detach_", "requires_grad_", "cuda", "cpu",
                      "zero_", "update", "unscale_", "set_epoch"})
#: tensor methods that return a new tensor (the original is unchanged)
_COPYING = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "long", "int", "bool", "contiguous",
                      "pin_memory", "detach", "clone", "type"})


@check(METHOD_NOT_CALLED, ast.Expr, needs_torch=False)
def method_not_called(node: ast.Expr, ctx: Context) -> None:
    value = node.value
    if isinstance(value, ast.Attribute) and value.attr in _METHODS and isinstance(value.ctx, ast.Load):
        if isinstance(value.value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
            fix = Fix(title=f"Call `{value.attr}()`", edits=(ctx.insert_after(value, "()"),))
            ctx.report(METHOD_NOT_CALLED, node, fields={"target": ctx.text(value)}, fix=fix)


@check(TENSOR_CONVERSION_DISCARDED, ast.Expr, needs_torch=False)
def tensor_copy_discarded(node: ast.Expr, ctx: Context) -> None:
    call = node.value
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute) or call.func.attr not in _COPYING:
        return
    receiver = call.func.value
    kind = ctx.kind(receiver)
    if kind is None or kind.tag != "batch" or kind.detail != "item" or not isinstance(receiver, ast.Name):
        return
    fix = Fix(title=f"Assign the result: `{receiver.id} = {ctx.text(call)}`",
              edits=(ctx.edit(call, f"{receiver.id} = {ctx.text(call)}"),))
    ctx.report(TENSOR_CONVERSION_DISCARDED, node, fields={"call": ctx.text(call), "name": receiver.id}, fix=fix)


@check(NON_STRICT_LOAD_IGNORED, ast.Call, names={"load_state_dict"})
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


@check(NON_STRICT_LOAD_IGNORED, ast.Assert)
def assertion(node: ast.Assert, ctx: Context) -> None:
    _remember_check(node, ctx)


@check(NON_STRICT_LOAD_IGNORED, ast.Call, names=_ASSERTIONS)
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


@check(NON_STRICT_LOAD_IGNORED, FILE_END)
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
