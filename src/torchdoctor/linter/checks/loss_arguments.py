"""TD430 loss-arguments-swapped, read from the source: a class-index loss (`F.cross_entropy`,
`F.nll_loss`, an `nn.CrossEntropyLoss` / `nn.NLLLoss` instance) given the labels first and a
model's output second: `F.nll_loss(target, output)` after `output = model(data)`.

"A model's output" is what the walk's value tracking says (`ctx.kind`: a call of an nn.Module
instance, `self.layer(x)`, followed through variables and `.view()`-style calls). "The labels"
need evidence too: a value drawn from a DataLoader, or a name that says so (`target`, `labels`,
`y`). Two model outputs (distillation) or an argument of unknown origin: silent.
"""

from __future__ import annotations

import ast

from torchdoctor.linter.api import Context, Fix, Kind, keyword, lint_check
from torchdoctor.linter.flow import holds_labels
from torchdoctor.rules.loss.loss_arguments_swapped import RULE as LOSS_ARGUMENTS_SWAPPED

_FUNCTIONAL = {"torch.nn.functional.cross_entropy": "F.cross_entropy", "torch.nn.functional.nll_loss": "F.nll_loss"}
_MODULES = frozenset({"CrossEntropyLoss", "NLLLoss"})


@lint_check(LOSS_ARGUMENTS_SWAPPED, ast.Call)
def loss_arguments_swapped(node: ast.Call, ctx: Context) -> None:
    loss = _class_loss(node, ctx)
    if loss is None or len(node.args) < 2 or keyword(node, "input") or keyword(node, "target"):
        return
    first, second = node.args[0], node.args[1]
    if isinstance(first, ast.Starred) or isinstance(second, ast.Starred):
        return
    output = ctx.kind(second)
    if not _model_output(output) or _model_output(ctx.kind(first)) or not holds_labels(first, ctx):
        return
    made = getattr(output.node if output is not None else None, "lineno", node.lineno)
    where = f" (made at line {made})" if made != node.lineno else ""
    swap = Fix("Swap the input and the target", (ctx.edit(first, ctx.text(second)), ctx.edit(second, ctx.text(first))), safe=False)
    ctx.report(LOSS_ARGUMENTS_SWAPPED, node, fix=swap, fields={
        "loss": loss,
        "input": f"`{ctx.text(first)}`, the labels",
        "target": f"`{ctx.text(second)}`, the model's output{where}",
    })


def _class_loss(node: ast.Call, ctx: Context) -> str | None:
    """The loss a call computes, when it is one that takes class indices as its target."""
    func = node.func
    if isinstance(func, (ast.Attribute, ast.Name)) and getattr(func, "attr", getattr(func, "id", None)) in ("cross_entropy", "nll_loss"):
        return _FUNCTIONAL.get(ctx.qualified(func) or "")
    kind = ctx.kind(func)
    if kind is not None and kind.tag == "loss_fn" and kind.detail in _MODULES:
        return kind.detail
    return None


def _model_output(kind: Kind | None) -> bool:
    """What a call of an nn.Module returned (also a model ending in a softmax/log_softmax)."""
    return kind is not None and (kind.tag == "output" or kind.detail == "model")
