"""Hand-written updates (`for p in model.parameters(): p.data.add_(-lr * p.grad)`) in a loop that
runs backward():

TD110: no gradient reset anywhere in the loop (`zero_grad()`, `p.grad.zero_()`, `p.grad = None`):
backward() adds to `.grad`, so each update applies the sum of every gradient so far. Only loops
with no reset at all are reported: a reset in any branch may cover the update.
TD111: a reset between the backward() and the update, with no backward() after it: the update
reads gradients that were just erased.
"""

from __future__ import annotations

import ast

from torchdoctor.linter.api import FILE_END, Context, Event, Scope, lint_check
from torchdoctor.linter.manual_updates import manual_update, over_parameters
from torchdoctor.linter.steps import TRACKED, is_backward, is_grad_reset, loop_events, order, passed_to_a_call, reached
from torchdoctor.rules.optimizer.missing_zero_grad import RULE as MISSING_ZERO_GRAD
from torchdoctor.rules.optimizer.zero_grad_before_step import RULE as ZERO_GRAD_BEFORE_STEP


@lint_check((MISSING_ZERO_GRAD, ZERO_GRAD_BEFORE_STEP), FILE_END, tracks=TRACKED, needs_torch=False)
def manual_update_without_reset(tree: ast.Module, ctx: Context) -> None:
    if not _loopsover_parameters(ctx):
        return
    reported: set[int] = set()
    for scope in ctx.scopes:
        for info in scope.loops.values():
            update = manual_update(info.node)
            if update is None or id(update) in reported:
                continue
            events = [e for e, _ in reached(loop_events(scope, info.node), ctx)]
            backwards = [e for e in events if is_backward(e) and e.scope is scope]
            if not backwards:
                continue
            resets = [e for e in events if is_grad_reset(e)]
            covering = [r for r in resets if not _other_mode(r, update, info.node)]
            if covering:
                _reset_before_update(update, backwards, covering, scope, reported, ctx)
                continue
            if passed_to_a_call(info.node, {b.receiver or "" for b in backwards}, ctx):
                continue
            reported.add(id(update))
            fields = {"update_line": update.lineno} | ({"reset_line": resets[0].line} if resets else {})
            ctx.report(MISSING_ZERO_GRAD, backwards[-1].node, fields=fields,
                       variant="manual-update-reset-elsewhere" if resets else "manual-update")


def _loopsover_parameters(ctx: Context) -> bool:
    """Some `for` of the file iterates parameters (the cheap pre-test: a manual update sits in
    one, so without one no loop is walked for it). Read off the walk's loops when it saw them all."""
    return not ctx.walked_whole_file or any(
        isinstance(info.node, (ast.For, ast.AsyncFor)) and over_parameters(info.node)
        for scope in ctx.scopes for info in scope.loops.values())


def _other_mode(reset: Event, update: ast.stmt, loop: ast.AST) -> bool:
    """The reset and the update sit in opposite branches of two `if`s that test the same thing
    (`if args.use_optimizer: optimizer.zero_grad()` ... `if args.use_optimizer: optimizer.step()
    else: <update by hand>`): whenever the update runs, that reset does not."""
    reset_sides = {ast.dump(c.test): _side(c, reset.line) for c in reset.conditions}
    for node in ast.walk(loop):
        if isinstance(node, ast.If) and node.lineno <= update.lineno <= (node.end_lineno or node.lineno):
            side = _side(node, update.lineno)
            if reset_sides.get(ast.dump(node.test), side) != side:
                return True
    return False


def _side(branch: ast.If, line: int) -> str:
    """"body" or "else": the branch of `branch` that holds `line`."""
    last = branch.body[-1]
    return "body" if line <= (last.end_lineno or last.lineno) else "else"


def _reset_before_update(update: ast.stmt, backwards: list[Event], resets: list[Event], scope: Scope,
                         reported: set[int], ctx: Context) -> None:
    """`loss.backward(); model.zero_grad()`, then the update: the reset erases the gradients the
    update reads (to None, so the update fails, or to zeros, so it does nothing)."""
    for reset in resets:
        if reset.scope is not scope or reset.line >= update.lineno:
            continue
        before = [b for b in backwards if order(b, reset) == -1]
        if before and not any(reset.line < b.line < update.lineno for b in backwards):
            reported.add(id(update))
            ctx.report(ZERO_GRAD_BEFORE_STEP, reset.node, variant="manual-update",
                       fields={"backward_line": before[-1].line, "update_line": update.lineno})
            return


