"""TD114 (the static side): a layer replaced or added after the optimizer was built from the
model's parameters, with no optimizer built again afterwards."""

from __future__ import annotations

import ast

from torchdoctor.linter.api import FILE_END, Context, Event, Scope, lint_check
from torchdoctor.linter.names import dotted
from torchdoctor.linter.steps import order, parameters_owner
from torchdoctor.rules.optimizer.parameter_not_in_optimizer import RULE as PARAMETER_NOT_IN_OPTIMIZER


def _model_of_optimizer(value: ast.expr, ctx: Context) -> str | None:
    """`model` for `torch.optim.SGD(model.parameters(), ...)`."""
    kind = ctx.kind(value)
    if kind is None or kind.tag != "optimizer" or not isinstance(value, ast.Call) or not value.args:
        return None
    return parameters_owner(value.args[0])


def _root(target: ast.expr) -> str | None:
    """`model` for `model.fc`, `model.classifier[6]`, `model.head.fc`."""
    node = target
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name) and node is not target:
        return node.id  # model[2] = nn.Linear(...)
    if not isinstance(node, ast.Attribute):
        return None
    return dotted(node.value) if not isinstance(node.value, ast.Subscript) else _root(node.value)


@lint_check(PARAMETER_NOT_IN_OPTIMIZER, ast.Assign)
def layers_and_optimizers(node: ast.Assign, ctx: Context) -> None:
    model = _model_of_optimizer(node.value, ctx)
    if model is not None:
        ctx.record("optimizer_built", node, model)
        return
    if len(node.targets) != 1:
        return
    kind = ctx.kind(node.value)
    if kind is None or kind.tag != "model":
        return
    target = node.targets[0]
    if isinstance(target, ast.Name):
        # `model = Net()` again: a new object (not `model = DDP(model)` or `model.to(device)`)
        if not any(isinstance(n, ast.Name) and n.id == target.id for n in ast.walk(node.value)):
            ctx.record("layer_replaced", node, target.id)
        return
    root = _root(target)
    if root is not None and root != "self":
        ctx.record("layer_replaced", node, root)


@lint_check(PARAMETER_NOT_IN_OPTIMIZER, FILE_END)
def report_layers_after_optimizer(tree: ast.Module, ctx: Context) -> None:
    for scope in ctx.scopes:
        built = [e for e in scope.events if e.name == "optimizer_built"]
        for replaced in (e for e in scope.events if e.name == "layer_replaced"):
            model = replaced.receiver or ""
            before = [b for b in built if _covers(b.receiver, model) and order(b, replaced) == -1]
            after = [b for b in built if _covers(b.receiver, model) and order(replaced, b) == -1]
            if before and not after:
                target = ctx.text(replaced.node.targets[0])  # type: ignore[union-attr]
                if target == model and not _still_used(before[-1], replaced, scope):
                    continue  # a new model with a new life: the old optimizer is not used again
                ctx.report(PARAMETER_NOT_IN_OPTIMIZER, replaced.node,
                           variant="model-re-created" if target == model else "layer-replaced",
                           fields={"target": target, "built_from": before[-1].receiver, "built_line": _line(before[-1])})


def _covers(optimized: str | None, model: str) -> bool:
    return optimized is not None and (model == optimized or model.startswith(optimized + "."))


def _still_used(built: Event, replaced: Event, scope: Scope) -> bool:
    """The optimizer built before the model was re-created is used after it (stepped, reset,
    returned) in the same function."""
    optimizer = dotted(built.node.targets[0])  # type: ignore[union-attr]
    if optimizer is None:
        return False
    if any(e.receiver == optimizer and order(replaced, e) == -1 for e in scope.events):
        return True
    after = replaced.node.end_lineno or replaced.node.lineno
    return any(isinstance(n, ast.Return) and n.lineno > after and n.value is not None
               and any(isinstance(m, ast.Name) and m.id == optimizer for m in ast.walk(n.value))
               for n in ast.walk(scope.node))


def _line(event: Event) -> int:
    return event.node.lineno
