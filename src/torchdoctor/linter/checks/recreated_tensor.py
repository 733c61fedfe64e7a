"""TD173: a trainable tensor and its optimizer made afresh in every iteration of a loop that
steps them once: the step is lost when the next iteration starts from the initial value again."""

from __future__ import annotations

import ast

from torchdoctor.linter.api import FILE_END, Context, Event, keyword, lint_check, literal
from torchdoctor.linter.names import dotted
from torchdoctor.linter.steps import TRACKED, assigned_names, order, stepped_optimizer
from torchdoctor.rules.optimizer.trainable_tensor_recreated_in_loop import RULE as TRAINABLE_TENSOR_RECREATED_IN_LOOP


@lint_check(TRAINABLE_TENSOR_RECREATED_IN_LOOP, ast.Assign)
def trainable_created(node: ast.Assign, ctx: Context) -> None:
    """`lam = torch.tensor(init, requires_grad=True)` (or `.requires_grad_()`) inside a loop."""
    if not ctx.loops or len(node.targets) != 1 or not isinstance(node.value, ast.Call):
        return
    target = dotted(node.targets[0])
    made: ast.expr = node.value
    trainable = False
    if isinstance(made.func, ast.Attribute) and made.func.attr == "requires_grad_":  # type: ignore[attr-defined]
        trainable = not made.args or literal(made.args[0]) is True  # type: ignore[attr-defined]
        made = made.func.value  # type: ignore[attr-defined]
    if target is None or not isinstance(made, ast.Call):
        return
    name = ctx.qualified(made.func) or ""
    if not name.startswith("torch.") or name.startswith("torch.nn."):
        return
    if trainable or literal(keyword(made, "requires_grad")) is True:
        ctx.record("trainable_created", node, target)


@lint_check(TRAINABLE_TENSOR_RECREATED_IN_LOOP, FILE_END, tracks=TRACKED)
def trainable_tensor_recreated(tree: ast.Module, ctx: Context) -> None:
    for scope in ctx.scopes:
        created = [e for e in scope.events if e.name == "trainable_created"]
        if not created:
            continue
        for made in (e for e in scope.events if e.name == "optimizer_created"):
            given = made.node.value.args[0] if made.node.value.args else None  # type: ignore[union-attr]
            members = {dotted(e) for e in given.elts} if isinstance(given, (ast.List, ast.Tuple)) else set()
            loop = made.loops[-1]
            steps = [s for s in scope.events if stepped_optimizer(s) == made.receiver and s.loops == made.loops
                     and order(made, s) == -1]
            for tensor in created:
                if (tensor.loops != made.loops or tensor.receiver not in members or order(tensor, made) != -1
                        or not steps or _changes_each_iteration(tensor, loop)):
                    continue
                if _read_after(tensor.receiver or "", loop.body, steps[-1].node.end_lineno or steps[-1].node.lineno):  # type: ignore[attr-defined]
                    continue  # used after the step in the same iteration (one refinement step, then used)
                ctx.report(TRAINABLE_TENSOR_RECREATED_IN_LOOP, tensor.node,
                           fields={"tensor": tensor.receiver, "optimizer": made.receiver})


def _changes_each_iteration(tensor: Event, loop: ast.AST) -> bool:
    """The tensor's initial value is computed from something the loop changes (its variable,
    a value updated in the body): then it may carry what was learned before."""
    value = tensor.node.value  # type: ignore[union-attr]
    own = tensor.receiver or ""
    assigned = {name for name in assigned_names(loop) if name != own and not name.startswith(own + ".")}
    return any(isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) in assigned for n in ast.walk(value))


def _reads(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load) and dotted(n) == name
               for n in ast.walk(node))


def _updates_only(statements: list[ast.stmt], name: str) -> bool:
    """Statements that only change the tensor itself: `t.data = ...`, `t.clamp_(...)`, and
    `if` tests on it around those (a clamp of a learned multiplier)."""
    for statement in statements:
        if isinstance(statement, ast.If):
            if not (_updates_only(statement.body, name) and _updates_only(statement.orelse, name)):
                return False
        elif isinstance(statement, ast.Assign):
            if not all((dotted(t) or "").startswith(name) for t in statement.targets):
                return False
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            func = statement.value.func
            if not (isinstance(func, ast.Attribute) and func.attr.endswith("_")
                    and (dotted(func.value) or "").startswith(name)):
                return False
        else:
            return False
    return True


def _read_after(name: str, body: list[ast.stmt], line: int) -> bool:
    """Is the tensor read by a statement of the iteration after `line`, other than to update itself?"""
    for statement in body:
        if (statement.end_lineno or statement.lineno) <= line:
            continue
        if isinstance(statement, ast.If):
            if _updates_only([statement], name):
                continue
            if statement.lineno > line and _reads(statement.test, name):
                return True
            if _read_after(name, statement.body, line) or _read_after(name, statement.orelse, line):
                return True
        elif isinstance(statement, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)):
            head = [getattr(statement, f) for f in ("iter", "test") if getattr(statement, f, None) is not None]
            if statement.lineno > line and any(_reads(h, name) for h in head):
                return True
            for block in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(statement, block, [])
                if block == "handlers":
                    inner = [s for h in inner for s in h.body]
                if _read_after(name, inner, line):
                    return True
        elif statement.lineno > line and not _updates_only([statement], name) and _reads(statement, name):
            return True
    return False
