"""TD415 before it crashes: a recurrent state carried from one batch to the next with its graph.

`outputs, states = model(inputs, states)` in a loop that runs backward(): the states returned
by this batch's forward are the next batch's input, and still hold this batch's graph. The next
backward() goes back through it, into a graph the first backward() freed, and fails ("Trying to
backward through the graph a second time"); with `retain_graph=True` it runs, and every batch's
graph stays in memory. Truncated backpropagation detaches the state at each batch.

Reported only for models known to be recurrent and to hand their state back with its graph:
`nn.LSTM` / `nn.GRU` / `nn.RNN` themselves, or a class of this file that builds one and calls
no `.detach()`. A loop that binds the state anywhere else (`states = detach(states)` before the
call or after it, `hidden = model.init_hidden()`) or detaches in place is fine.
"""

from __future__ import annotations

import ast

from torchdoctor.linter.api import FILE_END, Context, Scope, dotted, lint_check
from torchdoctor.linter.steps import TRACKED, is_backward, loop_events
from torchdoctor.rules.grad_flow.backward_through_freed_graph import RULE as BACKWARD_THROUGH_FREED_GRAPH

_RECURRENT = frozenset({"torch.nn.LSTM", "torch.nn.GRU", "torch.nn.RNN"})


@lint_check(BACKWARD_THROUGH_FREED_GRAPH, ast.Assign)
def state_fed_back(node: ast.Assign, ctx: Context) -> None:
    """`out, h = model(x, h)` inside a loop, with `model` a recurrent model: remember it."""
    value = node.value
    if not ctx.loops or not isinstance(value, ast.Call) or len(node.targets) != 1:
        return
    stored = {dotted(t) for t in _items(node.targets[0])} - {None}
    given = {dotted(a) for a in value.args} - {None}
    carried = sorted(stored & given)  # type: ignore[type-var]
    if carried and _recurrent(value.func, ctx):
        ctx.memo.setdefault(BACKWARD_THROUGH_FREED_GRAPH.code, []).append((ctx.scope, ctx.loops[-1], node, carried[0]))


@lint_check(BACKWARD_THROUGH_FREED_GRAPH, FILE_END, tracks=TRACKED)
def report_carried_states(tree: ast.Module, ctx: Context) -> None:
    for scope, loop, node, state in ctx.memo.get(BACKWARD_THROUGH_FREED_GRAPH.code, []):
        if not _backward_each_pass(scope, loop) or _rebound(loop, node, state):
            continue
        ctx.report(BACKWARD_THROUGH_FREED_GRAPH, node, variant="carried-state", fields={"state": state})


def _items(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [item for element in target.elts for item in _items(element)]
    return [target]


def _recurrent(func: ast.expr, ctx: Context) -> bool:
    """The callee is an `nn.LSTM`/`GRU`/`RNN`, or a model of a class of this file that builds one
    and never detaches."""
    kind = ctx.kind(func)
    made = kind.node if kind is not None and kind.tag == "model" else None
    if not isinstance(made, ast.Call):
        return False
    qualified = ctx.qualified(made.func) or ""
    if qualified in _RECURRENT:
        return True
    info = ctx.classes.get(made.func.id) if isinstance(made.func, ast.Name) else None
    if info is None or not info.is_module:
        return False
    calls = [n for n in ast.walk(info.node) if isinstance(n, ast.Call)]
    builds = any((ctx.qualified(c.func) or "") in _RECURRENT for c in calls)
    return builds and not any(isinstance(c.func, ast.Attribute) and c.func.attr in ("detach", "detach_") for c in calls)


def _backward_each_pass(scope: Scope, loop: ast.AST) -> bool:
    """A backward() in the loop itself, without `retain_graph=True` (TD148's case)."""
    backwards = [e for e in loop_events(scope, loop) if is_backward(e) and e.loops and e.loops[-1] is loop]
    return bool(backwards) and not any(
        isinstance(e.node, ast.Call) and any(k.arg == "retain_graph" for k in e.node.keywords) for e in backwards)


def _rebound(loop: ast.AST, call: ast.Assign, state: str) -> bool:
    """The loop binds `state` somewhere else too (a detach before the call or after it, a fresh
    state, a reset), or detaches something in place (`h.detach_()`)."""
    for node in ast.walk(loop):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node is not call:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(dotted(t) == state for target in targets for t in _items(target)):
                return True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "detach_":
            return True
    return isinstance(loop, (ast.For, ast.AsyncFor)) and any(dotted(t) == state for t in _items(loop.target))
