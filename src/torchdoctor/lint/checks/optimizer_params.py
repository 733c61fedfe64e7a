"""TD114 (the static side): a layer replaced or added after the optimizer was built from the
model's parameters, with no optimizer built again afterwards."""

from __future__ import annotations

import ast

from torchdoctor.lint.api import FILE_END, Context, check
from torchdoctor.lint.names import dotted
from torchdoctor.lint.steps import order


def _model_of_optimizer(value: ast.expr, ctx: Context) -> str | None:
    """`model` for `torch.optim.SGD(model.parameters(), ...)`."""
    kind = ctx.kind(value)
    if kind is None or kind.tag != "optimizer" or not isinstance(value, ast.Call) or not value.args:
        return None
    first = value.args[0]
    if isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute) and first.func.attr == "parameters":
        return dotted(first.func.value)
    return None


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


@check("TD114", ast.Assign)
def layers_and_optimizers(node: ast.Assign, ctx: Context) -> None:
    model = _model_of_optimizer(node.value, ctx)
    if model is not None:
        ctx.record("optimizer_built", node, model)
        return
    if len(node.targets) != 1 or isinstance(node.targets[0], ast.Name):
        return
    kind = ctx.kind(node.value)
    if kind is None or kind.tag != "model":
        return
    root = _root(node.targets[0])
    if root is not None and root != "self":
        ctx.record("layer_replaced", node, root)


@check("TD114", FILE_END)
def report_layers_after_optimizer(tree: ast.Module, ctx: Context) -> None:
    for scope in ctx.scopes:
        built = [e for e in scope.events if e.name == "optimizer_built"]
        for replaced in (e for e in scope.events if e.name == "layer_replaced"):
            model = replaced.receiver or ""
            before = [b for b in built if _covers(b.receiver, model) and order(b, replaced) == -1]
            after = [b for b in built if _covers(b.receiver, model) and order(replaced, b) == -1]
            if before and not after:
                target = ctx.text(replaced.node.targets[0])  # type: ignore[attr-defined]
                ctx.report("TD114", replaced.node, message=(
                    f"`{target}` is assigned a new layer after the optimizer was built from "
                    f"`{before[-1].receiver}.parameters()` (line {before[-1].node.lineno}): its parameters are in no "  # type: ignore[attr-defined]
                    "param group and will never be updated"))


def _covers(optimized: str | None, model: str) -> bool:
    return optimized is not None and (model == optimized or model.startswith(optimized + "."))
