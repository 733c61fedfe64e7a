"""Statements whose result is thrown away although it was the point: a method named but not
called (TD152), a tensor moved or converted into a copy nobody keeps (TD154), the report of a
non-strict `load_state_dict` (TD160)."""

from __future__ import annotations

import ast

from torchdoctor.core.finding import Fix
from torchdoctor.lint.api import Context, check, keyword, literal

#: methods of modules, optimizers and tensors that do nothing unless called
_METHODS = frozenset({"eval", "train", "zero_grad", "step", "backward", "detach_", "requires_grad_", "cuda", "cpu",
                      "zero_", "update", "unscale_", "set_epoch"})
#: tensor methods that return a new tensor (the original is unchanged)
_COPYING = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "long", "int", "bool", "contiguous",
                      "pin_memory", "detach", "clone", "type"})


@check("TD152", ast.Expr, needs_torch=False)
def method_not_called(node: ast.Expr, ctx: Context) -> None:
    value = node.value
    if isinstance(value, ast.Attribute) and value.attr in _METHODS and isinstance(value.ctx, ast.Load):
        if isinstance(value.value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
            fix = Fix(title=f"Call `{value.attr}()`", edits=(ctx.insert_after(value, "()"),))
            ctx.report("TD152", node, method=value.attr, target=ctx.text(value), fix=fix)


@check("TD154", ast.Expr, needs_torch=False)
def tensor_copy_discarded(node: ast.Expr, ctx: Context) -> None:
    call = node.value
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute) or call.func.attr not in _COPYING:
        return
    receiver = call.func.value
    kind = ctx.kind(receiver)
    if kind is None or kind.tag != "batch" or kind.detail != "item" or not isinstance(receiver, ast.Name):
        return
    fix = Fix(title=f"Assign the result: `{receiver.id} = {ctx.text(call)}`",
              edits=(ctx.edit(call, f"{receiver.id} = {ctx.text(call)}"),))
    ctx.report("TD154", node, call=ctx.text(call), name=receiver.id, fix=fix)


@check("TD160", ast.Expr)
def non_strict_load_ignored(node: ast.Expr, ctx: Context) -> None:
    call = node.value
    if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "load_state_dict"
            and literal(keyword(call, "strict")) is False and call.args):
        state = ctx.kind(call.args[0])
        if state is not None and state.tag == "checkpoint":  # read from a file, not copied from a live model
            ctx.report("TD160", node, target=ctx.text(call.func.value))
