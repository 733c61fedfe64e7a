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
import re

from torchdoctor.lint.api import Context, Fix, Kind, check, dotted, keyword
from torchdoctor.rules.loss.loss_arguments_swapped import RULE as LOSS_ARGUMENTS_SWAPPED

_FUNCTIONAL = {"torch.nn.functional.cross_entropy": "F.cross_entropy", "torch.nn.functional.nll_loss": "F.nll_loss"}
_MODULES = frozenset({"CrossEntropyLoss", "NLLLoss"})
#: names people give class labels (the last part of a dotted name)
_LABEL_NAME = re.compile(r"^(y|y_true|gt|labels?|targets?|tgts?|classes|class_ids?|[a-z0-9]+_(labels?|targets?))$", re.I)


@check(LOSS_ARGUMENTS_SWAPPED, ast.Call)
def loss_arguments_swapped(node: ast.Call, ctx: Context) -> None:
    loss = _class_loss(node, ctx)
    if loss is None or len(node.args) < 2 or keyword(node, "input") or keyword(node, "target"):
        return
    first, second = node.args[0], node.args[1]
    if isinstance(first, ast.Starred) or isinstance(second, ast.Starred):
        return
    output = ctx.kind(second)
    if not _model_output(output) or _model_output(ctx.kind(first)) or not _labels(first, ctx):
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


def _labels(node: ast.expr, ctx: Context) -> bool:
    """The value is labels: drawn from a DataLoader, or named so (through `.view()`-style calls
    and indexing: `targets.view(-1)`, `batch["labels"]`)."""
    kind = ctx.kind(node)
    if kind is not None:
        return kind.tag == "batch"
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _KEEPS:
            node = node.func.value
        elif isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return bool(_LABEL_NAME.match(key.value))
            node = node.value
        else:
            break
    name = dotted(node)
    return name is not None and bool(_LABEL_NAME.match(name.rpartition(".")[2]))


#: calls that keep a tensor's meaning (labels stay labels)
_KEEPS = frozenset({"view", "reshape", "flatten", "squeeze", "unsqueeze", "long", "to", "cuda", "cpu", "contiguous",
                    "view_as", "reshape_as", "type", "type_as", "detach"})
