"""Inside `forward`: values taken out of autograd (TD121), functional dropout that ignores
eval() (TD130).

TD121 follows the forward's activations (its tensor arguments and whatever is computed from
them or from submodule calls) and flags the cuts that feed the computation again: re-wrapping
an activation with `torch.tensor(...)`, `.data` of an activation, `h = h.detach()`, and
returning a detached output. Under `torch.no_grad()` a cut is deliberate and not flagged.
"""

from __future__ import annotations

import ast

from torchdoctor.core.finding import Fix
from torchdoctor.lint.api import Context, check, may_pass

_REWRAP = frozenset({"torch.tensor", "torch.as_tensor", "torch.from_numpy", "torch.Tensor", "torch.FloatTensor"})
_METADATA = frozenset({"shape", "size", "dtype", "device", "ndim", "dim", "numel", "is_cuda", "requires_grad", "layout"})
_DROPOUTS = frozenset({"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"})


def _activations(ctx: Context) -> set[str]:
    """Names holding activations computed in the current forward: results of submodule calls
    and what is computed from them. (The forward's own arguments are not counted: inputs such
    as timesteps or indices are data, and cutting them off the graph changes nothing.)"""
    store: dict[int, set[str]] = ctx.memo.setdefault("TD121", {})
    return store.setdefault(id(ctx.scope), set())


def _carries(node: ast.expr, names: set[str], methods: frozenset[str] = frozenset()) -> bool:
    """Does the value of `node` depend on an activation (its values, not only its shape)?
    `self.x(...)` makes one, unless `x` is one of the class's own methods (`methods`)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Name):
            if item.id in names:
                return True
            continue
        if isinstance(item, ast.Attribute):
            if item.attr in _METADATA:
                continue
            if isinstance(item.value, ast.Name) and item.value.id == "self":
                continue  # a parameter or buffer read is not an activation
        if isinstance(item, ast.Call):
            func = item.func
            if isinstance(func, ast.Name) and func.id in ("len", "isinstance", "type"):
                continue
            if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
                    and func.attr not in methods):
                return True  # a submodule call makes an activation
        stack.extend(ast.iter_child_nodes(item))
    return False


def _methods(ctx: Context) -> frozenset[str]:
    return ctx.class_info.methods if ctx.class_info is not None else frozenset()


@check("TD121", ast.Assign)
def track_activations(node: ast.Assign, ctx: Context) -> None:
    if not ctx.in_forward:
        return
    names = _activations(ctx)
    carries = _carries(node.value, names, _methods(ctx))
    for target in node.targets:
        for item in ast.walk(target):
            if isinstance(item, ast.Name):
                (names.add if carries else names.discard)(item.id)
    if ctx.grad_disabled or ctx.conditions or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
        return  # under an `if`, a detach is an option the author chose (e.g. `if freeze_embeddings:`)
    value = node.value
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "detach"
            and isinstance(value.func.value, ast.Name) and value.func.value.id == node.targets[0].id
            and value.func.value.id in names):
        ctx.report("TD121", value, call=ctx.text(value))


@check("TD121", ast.Return)
def detached_output(node: ast.Return, ctx: Context) -> None:
    value = node.value
    if not ctx.in_forward or ctx.grad_disabled or value is None:
        return
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "detach"
            and _carries(value.func.value, _activations(ctx), _methods(ctx))):
        message = (f"forward() returns `{ctx.text(value)}`: the whole output is cut from the autograd graph, "
                   "so no layer of this module receives a gradient")
        ctx.report("TD121", value, call=ctx.text(value), message=message)


@check("TD121", ast.Call, names={"tensor", "as_tensor", "from_numpy", "Tensor", "FloatTensor"})
def rewrapped_activation(node: ast.Call, ctx: Context) -> None:
    if not ctx.in_forward or ctx.grad_disabled or not node.args:
        return
    if ctx.qualified(node.func) in _REWRAP and _carries(node.args[0], _activations(ctx), _methods(ctx)):
        ctx.report("TD121", node, call=ctx.text(node))


@check("TD121", ast.Attribute)
def data_of_activation(node: ast.Attribute, ctx: Context) -> None:
    if node.attr != "data" or not isinstance(node.ctx, ast.Load) or not ctx.in_forward or ctx.grad_disabled:
        return
    if _carries(node.value, _activations(ctx), _methods(ctx)):
        ctx.report("TD121", node, call=ctx.text(node))


@check("TD130", ast.Call, names=_DROPOUTS)
def functional_dropout_ignores_eval(node: ast.Call, ctx: Context) -> None:
    info = ctx.class_info
    if ctx.scope.cls is None and ctx.function is None or info is None:
        return
    name = ctx.qualified(node.func) or ""
    if name.rpartition(".")[0] != "torch.nn.functional" or may_pass(node, "training", 2):
        return
    if not (info.is_module or "forward" in info.methods):
        return
    fix = None
    if "self" in ctx.scope.params:
        fix = Fix(title="Pass `training=self.training`", edits=(ctx.add_keyword(node, "training=self.training"),))
    ctx.report("TD130", node, call=ctx.text(node.func), fix=fix)
