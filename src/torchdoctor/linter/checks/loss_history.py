"""TD147: a running total of loss tensors that keeps every step's autograd graph alive.

A total that the same loop sets back to a fresh value (`running_loss = 0` after each optimizer
step) holds the graphs of a few iterations at most: nothing grows, and it is not flagged.
"""

from __future__ import annotations

import ast

from torchdoctor.core.finding import Fix
from torchdoctor.linter.api import FILE_END, Context, lint_check
from torchdoctor.linter.names import dotted
from torchdoctor.linter.steps import TRACKED, is_backward
from torchdoctor.rules.memory.loss_accumulated_with_history import RULE as LOSS_ACCUMULATED_WITH_HISTORY


@lint_check(LOSS_ACCUMULATED_WITH_HISTORY, ast.AugAssign, needs_torch=False)
def loss_accumulated(node: ast.AugAssign, ctx: Context) -> None:
    if not isinstance(node.op, ast.Add) or not ctx.loops or ctx.grad_disabled:
        return
    _remember(node, node.target, node.value, ctx)


@lint_check(LOSS_ACCUMULATED_WITH_HISTORY, ast.Assign, needs_torch=False)
def loss_summed(node: ast.Assign, ctx: Context) -> None:
    value = node.value
    if (not ctx.loops or ctx.grad_disabled or len(node.targets) != 1 or not isinstance(value, ast.BinOp)
            or not isinstance(value.op, ast.Add)):
        return
    target = dotted(node.targets[0])
    if target is not None and dotted(value.left) == target:
        _remember(node, node.targets[0], value.right, ctx)


def _remember(node: ast.AST, target: ast.expr, value: ast.expr, ctx: Context) -> None:
    name = dotted(target)
    if name is None or not isinstance(value, (ast.Name, ast.Attribute)):
        return
    kind = ctx.kind(value)
    if kind is None or kind.tag != "loss":
        looks = isinstance(value, ast.Name) and "loss" in value.id.lower()
        if not looks:
            return
    ctx.memo.setdefault(LOSS_ACCUMULATED_WITH_HISTORY.code, []).append((ctx.scope, ctx.loops, node, name, value))


_FRESH = (ast.Constant, ast.Call, ast.UnaryOp)


@lint_check(LOSS_ACCUMULATED_WITH_HISTORY, ast.Assign, needs_torch=False)
def total_reset(node: ast.Assign, ctx: Context) -> None:
    """`running_loss = 0` (or `= torch.zeros(())`, `running_loss, n = 0.0, 0`) inside a loop."""
    if not ctx.loops or not isinstance(node.value, (*_FRESH, ast.Tuple)):
        return
    pairs: list[tuple[ast.expr, ast.expr]] = []
    for target in node.targets:
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) and len(target.elts) == len(node.value.elts):
            pairs.extend(zip(target.elts, node.value.elts))
        else:
            pairs.append((target, node.value))
    for target, value in pairs:
        name = dotted(target)
        if name is None or not isinstance(value, _FRESH):
            continue
        if not any(isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) == name for n in ast.walk(value)):
            ctx.memo.setdefault("TD147-reset", []).append((ctx.scope, ctx.loops, name))


@lint_check(LOSS_ACCUMULATED_WITH_HISTORY, FILE_END, tracks=TRACKED, needs_torch=False)
def report_accumulated_losses(tree: ast.Module, ctx: Context) -> None:
    resets = ctx.memo.get("TD147-reset", [])
    for scope, loops, node, total, value in ctx.memo.get(LOSS_ACCUMULATED_WITH_HISTORY.code, []):
        loop = loops[-1]
        if any(s is scope and name == total and any(n is loop for n in reset_loops) for s, reset_loops, name in resets):
            continue  # set back to a fresh value in the same loop: the graphs kept are a few iterations' at most
        term = dotted(value)
        backwards = [e for e in scope.events if is_backward(e)]
        if any(e.receiver == total for e in backwards):
            continue  # the total is what gets backpropagated: gradient accumulation on purpose
        if not any(e.receiver == term and any(n is loop for n in e.loops) for e in backwards):
            continue  # only when the term is a training loss, backpropagated on its own in this loop
        fix = Fix(title=f"Accumulate `{term}.item()`", edits=(ctx.insert_after(value, ".item()"),), safe=False)
        ctx.report(LOSS_ACCUMULATED_WITH_HISTORY, node, fields={"target": total, "value": term}, fix=fix)
