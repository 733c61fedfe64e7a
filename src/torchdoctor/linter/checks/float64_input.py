"""TD411 from the source: a tensor converted to float64 (`x.double()`, `x.to(torch.float64)`)
is given to a model that nothing in the file makes float64. The model's weights are float32, so its first layer fails
with "mat1 and mat2 must have the same dtype" (an embedding, with "Expected tensor for argument
#1 'indices' to have one of the following scalar types").

A model made float64 anywhere in the file (`model.double()`, `self.double()`, `.to(dtype)`, a
layer built with `dtype=`, `torch.set_default_dtype`, a dtype named in a string) silences the
file. The conversion is read in the call (`model(data.double())`) or in the assignment of the name the
call passes, in the same function (`data = data.double().to(device)`). A model whose class in
this file converts its input in `forward()` (`x.float()`, `x.to(...)`) is left alone.
"""

from __future__ import annotations

import ast
import re

from torchdoctor.linter.api import FILE_END, Context, dotted, lint_check
from torchdoctor.rules.dtype.dtype_mismatch import RULE as DTYPE_MISMATCH

_FLOAT64 = frozenset({"torch.float64", "torch.double", "torch.DoubleTensor", "torch.cuda.DoubleTensor"})
#: calls that keep a tensor's dtype on the way to the model
_KEEPS = frozenset({"to", "cuda", "cpu", "view", "reshape", "flatten", "unsqueeze", "squeeze", "contiguous", "clone",
                    "detach", "requires_grad_", "permute", "transpose"})
#: a dtype named in a string (a setting: `--dtype float64`, `getattr(torch, "double")`)
_FLOAT64_TEXT = re.compile(r"[\"'](?:torch\.)?(?:float64|double)[\"']")
#: those strings as the code holds them (a comment that quotes one holds none)
_FLOAT64_STRINGS = frozenset({"float64", "double", "torch.float64", "torch.double"})
#: a forward() that converts its input on its own
_CONVERTS = frozenset({"float", "to", "type", "type_as", "half", "bfloat16"})
#: a float64 conversion spells one of these (`.double()`, `torch.float64`, `torch.DoubleTensor`,
#: or the import that names them): a file without any is not read for the rule
_SPELLED = ("double", "Double", "float64")


def _conversion(value: ast.expr, ctx: Context) -> ast.Call | None:
    """The `.double()` / `.to(torch.float64)` call a value is made by, through dtype-keeping calls."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        method = value.func.attr
        if method == "double" and not value.args and not value.keywords:
            return value
        if method in ("to", "type") and any(ctx.qualified(a) in _FLOAT64 for a in [*value.args, *(k.value for k in value.keywords)]):
            return value
        if method not in _KEEPS or ctx.qualified(value.func) is not None:
            return None
        value = value.func.value
    return None


@lint_check(DTYPE_MISMATCH, ast.Assign, needs_text=_SPELLED)
def float64_bound(node: ast.Assign, ctx: Context) -> None:
    """Which names of this function hold a float64 conversion now (rebinding forgets it)."""
    bound = ctx.memo.setdefault("TD411-bound", {}).setdefault(id(ctx.scope), {})
    made = _conversion(node.value, ctx)
    for target in node.targets:
        if isinstance(target, ast.Name):
            if made is not None:
                bound[target.id] = made
            else:
                bound.pop(target.id, None)


@lint_check(DTYPE_MISMATCH, ast.Call, needs_text=_SPELLED)
def float64_into_model(node: ast.Call, ctx: Context) -> None:
    _float64_model(node, ctx)
    if not node.args or isinstance(node.args[0], ast.Starred):
        return
    kind = ctx.kind(node.func)
    if kind is None or kind.tag != "model" or ctx.qualified(node.func) is not None:
        return
    first = node.args[0]
    made = _conversion(first, ctx)
    if made is None and isinstance(first, ast.Name):
        made = ctx.memo.get("TD411-bound", {}).get(id(ctx.scope), {}).get(first.id)
    if made is not None:
        ctx.memo.setdefault("TD411-calls", []).append((made, node, kind.node))


def _float64_string(tree: ast.Module) -> bool:
    return any(n.__class__ is ast.Constant and n.value in _FLOAT64_STRINGS for n in ast.walk(tree))


@lint_check(DTYPE_MISMATCH, FILE_END, needs_text=_SPELLED)
def report_float64_inputs(tree: ast.Module, ctx: Context) -> None:
    calls = ctx.memo.get("TD411-calls", [])
    if not calls or ctx.memo.get("TD411-float64-model") or (_FLOAT64_TEXT.search(ctx.source.text) and _float64_string(tree)):
        return  # a model made float64 (or a dtype chosen by a setting) somewhere in this file
    reported: set[int] = set()
    for made, call, model in calls:
        if id(made) in reported or _converts_in_forward(model, ctx):
            continue
        reported.add(id(made))
        name = dotted(call.func) or "the model"
        ctx.report(DTYPE_MISMATCH, made, fields={
            "first": f"`{ctx.text(made)}`", "first_dtype": "float64",
            "second": f"`{name}`", "second_dtype": "float32 (its weights: nothing in this file makes them float64)",
            "where": f": `{ctx.text(call)[:60]}` fails with a dtype error at its first layer",
        })


def _float64_model(node: ast.Call, ctx: Context) -> None:
    """Note the signs that a model of this file is float64 on purpose: `model.double()`,
    `self.double()`, `model.to(torch.float64)` or `.to(dtype)`, `nn.Linear(..., dtype=torch.float64)`,
    `torch.set_default_dtype(...)`."""
    qualified = ctx.qualified(node.func) or ""
    func = node.func
    receiver = func.value if isinstance(func, ast.Attribute) else None
    # only a float64 conversion, or `.to(dtype)` / `.type(dtype)`, asks what its receiver is
    converts = isinstance(func, ast.Attribute) and (_conversion(node, ctx) is node or func.attr in ("to", "type") and bool(
        node.args) and "dtype" in (dotted(node.args[0]) or "").lower())
    if (qualified in ("torch.set_default_dtype", "torch.set_default_tensor_type")
            or converts and receiver is not None and _is_model(receiver, ctx)
            or qualified.startswith("torch.nn.") and any(k.arg == "dtype" for k in node.keywords)):
        ctx.memo["TD411-float64-model"] = True


def _is_model(value: ast.expr, ctx: Context) -> bool:
    """A model instance: known to the walk, `self` (in a module's method), or a layer or a model
    class built on the spot (`nn.Linear(3, 1).double()`, `Net().double()`)."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _KEEPS:
        value = value.func.value
    kind = ctx.kind(value)
    if (kind is not None and kind.tag == "model") or (isinstance(value, ast.Name) and value.id == "self"):
        return True
    if isinstance(value, ast.Call):
        qualified = ctx.qualified(value.func) or ""
        return qualified.startswith(("torch.nn.", "torchvision.models.")) or (dotted(value.func) or "") in ctx.classes
    return False


def _converts_in_forward(made: ast.AST | None, ctx: Context) -> bool:
    """The model's class (defined in this file) converts its input in forward(): `x.float()`,
    `x.to(torch.float32)`, `x.type_as(self.weight)` on its first argument."""
    call = made
    while isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call):
        call = call.func.value  # `Net().to(device)`: the class is the innermost call
    info = ctx.classes.get(dotted(call.func) or "") if isinstance(call, ast.Call) else None
    forward = next((item for item in info.node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and item.name == "forward"), None) if info is not None else None
    if forward is None or len(forward.args.args) < 2:
        return False
    given = forward.args.args[1].arg
    for node in ast.walk(forward):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                and node.func.value.id == given and node.func.attr in _CONVERTS):
            if node.func.attr != "to" or any(k.arg == "dtype" for k in node.keywords) or any(
                    (ctx.qualified(a) or "").startswith("torch.") or "dtype" in (dotted(a) or "") for a in node.args):
                return True
    return False
