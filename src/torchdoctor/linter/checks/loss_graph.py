"""TD171: a loss made differentiable by hand (`loss.requires_grad = True`, re-wrapping its value):
backward() then runs and no parameter gets a gradient.

(`loss.requires_grad_()` is not flagged: on a loss that has a graph it is a harmless no-op,
while assigning `requires_grad` succeeds only on a leaf, that is on a loss without a graph.)"""

from __future__ import annotations

import ast

from torchdoctor.linter.api import Context, keyword, lint_check, literal
from torchdoctor.linter.names import dotted
from torchdoctor.rules.grad_flow.requires_grad_on_loss import RULE as REQUIRES_GRAD_ON_LOSS

_WRAPS = frozenset({"torch.tensor", "torch.as_tensor", "torch.Tensor", "torch.autograd.Variable"})


def _is_loss(node: ast.expr, ctx: Context) -> bool:
    kind = ctx.kind(node)
    if kind is not None:
        return kind.tag == "loss"
    name = dotted(node)
    return name is not None and "loss" in name.rpartition(".")[2].lower()


@lint_check(REQUIRES_GRAD_ON_LOSS, ast.Assign, needs_torch=False)
def requires_grad_set_on_loss(node: ast.Assign, ctx: Context) -> None:
    for target in node.targets:
        if (isinstance(target, ast.Attribute) and target.attr == "requires_grad" and literal(node.value) is True
                and _is_loss(target.value, ctx)):
            ctx.report(REQUIRES_GRAD_ON_LOSS, node, fields={"loss": ctx.text(target.value)})


@lint_check(REQUIRES_GRAD_ON_LOSS, ast.Call, names={"tensor", "as_tensor", "Tensor", "Variable"})
def loss_value_rewrapped(node: ast.Call, ctx: Context) -> None:
    if ctx.qualified(node.func) not in _WRAPS or not node.args or literal(keyword(node, "requires_grad")) is not True:
        return
    value = node.args[0]
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ("item", "tolist"):
        value = value.func.value
    if _is_loss(value, ctx):
        ctx.report(REQUIRES_GRAD_ON_LOSS, node, fields={"loss": ctx.text(value)})
