"""Easy-to-miss API slips: an implicit softmax dimension (TD150), deprecated torch.cuda.amp
entry points (TD167), a misspelt `requires_grad` (TD168), a trainable tensor turned into a
non-leaf copy (TD169), a 0-dim loss or reduction indexed as if it had a dimension (TD179), a
model's output normalised over the batch axis (TD181)."""

from __future__ import annotations

import ast
import re

from torchdoctor.core.finding import Edit, Fix
from torchdoctor.linter.api import FILE_END, Context, argument, keyword, lint_check, literal, may_pass
from torchdoctor.linter.names import spells
from torchdoctor.rules.api.deprecated_amp_api import RULE as DEPRECATED_AMP_API
from torchdoctor.rules.api.softmax_implicit_dim import RULE as SOFTMAX_IMPLICIT_DIM
from torchdoctor.rules.api.zero_dim_index import RULE as ZERO_DIM_INDEX
from torchdoctor.rules.grad_flow.requires_grad_on_copy import RULE as REQUIRES_GRAD_ON_COPY
from torchdoctor.rules.grad_flow.requires_grad_typo import RULE as REQUIRES_GRAD_TYPO
from torchdoctor.rules.loss.softmax_over_batch import RULE as SOFTMAX_OVER_BATCH

_FUNCTIONAL_SOFTMAX = frozenset({"torch.nn.functional.softmax", "torch.nn.functional.log_softmax",
                                 "torch.nn.functional.softmin"})
_MODULE_SOFTMAX = frozenset({"torch.nn.Softmax", "torch.nn.LogSoftmax", "torch.nn.Softmin"})


@lint_check(SOFTMAX_IMPLICIT_DIM, ast.Call, names={"softmax", "log_softmax", "softmin", "Softmax", "LogSoftmax", "Softmin"})
def softmax_implicit_dim(node: ast.Call, ctx: Context) -> None:
    name = ctx.qualified(node.func)
    if name in _FUNCTIONAL_SOFTMAX and not may_pass(node, "dim", 1):
        ctx.report(SOFTMAX_IMPLICIT_DIM, node, fields={"call": ctx.text(node.func)})
    elif name in _MODULE_SOFTMAX and not may_pass(node, "dim", 0):
        ctx.report(SOFTMAX_IMPLICIT_DIM, node, fields={"call": ctx.text(node.func)})


_DEPRECATED_AMP = {
    "torch.cuda.amp.GradScaler": ("torch.amp.GradScaler", "cuda"),
    "torch.cuda.amp.autocast": ("torch.amp.autocast", "cuda"),
    "torch.cpu.amp.GradScaler": ("torch.amp.GradScaler", "cpu"),
    "torch.cpu.amp.autocast": ("torch.amp.autocast", "cpu"),
    "torch.cuda.amp.custom_fwd": ("torch.amp.custom_fwd", "cuda"),
    "torch.cuda.amp.custom_bwd": ("torch.amp.custom_bwd", "cuda"),
}


@lint_check(DEPRECATED_AMP_API, ast.Call, names={"GradScaler", "autocast", "custom_fwd", "custom_bwd"})
def deprecated_amp_call(node: ast.Call, ctx: Context) -> None:
    _deprecated_amp(node.func, node, ctx)


@lint_check(DEPRECATED_AMP_API, ast.FunctionDef)
def deprecated_amp_decorator(node: ast.FunctionDef, ctx: Context) -> None:
    for decorator in node.decorator_list:
        if not isinstance(decorator, ast.Call):
            _deprecated_amp(decorator, None, ctx)


@lint_check(DEPRECATED_AMP_API, ast.Try)
def remember_amp_fallbacks(node: ast.Try, ctx: Context) -> None:
    """`try: torch.amp.GradScaler(...) except ...: torch.cuda.amp.GradScaler()` is a fallback
    for an old torch, written on purpose: remember the `except` lines. `try: from torch.amp
    import GradScaler except ImportError: from torch.cuda.amp import GradScaler` binds the new
    one wherever it exists: remember the names."""
    uses_new = any(isinstance(n, ast.Call) and (ctx.qualified(n.func) or "").startswith("torch.amp.")
                   for statement in node.body for n in ast.walk(statement))
    if uses_new:
        ctx.memo.setdefault(DEPRECATED_AMP_API.code, []).extend((h.lineno, h.end_lineno) for h in node.handlers)
    new = {alias.asname or alias.name for statement in node.body if isinstance(statement, ast.ImportFrom)
           and statement.module in ("torch", "torch.amp") for alias in statement.names}
    if new:
        ctx.memo.setdefault("TD167-new", set()).update(new)


_AMP_WORD = re.compile(r"\bamp\b")
_VERSION_WORDS = re.compile(r"version|torch_(greater|less|ge|gt|le|lt)|_torch_\d", re.I)


@lint_check(DEPRECATED_AMP_API, ast.If)
def remember_version_branches(node: ast.If, ctx: Context) -> None:
    """`if torch_version < (2, 4): torch.cuda.amp.GradScaler() else: torch.amp.GradScaler("cuda")`:
    both branches of a test on the torch version (or on `hasattr(torch, ...)`) are written on purpose."""
    uses = ctx.memo.get("TD167-file")
    if uses is None:
        uses = ctx.memo["TD167-file"] = _AMP_WORD.search(ctx.source.text) is not None
    if not uses:
        return  # no torch.cuda.amp / torch.cpu.amp in the file: no fallback to remember
    test = ctx.text(node.test)
    if _VERSION_WORDS.search(test) is None and "hasattr" not in test:
        return  # the words looked for below are spelled in the test's text
    for item in ast.walk(node.test):
        if isinstance(item, ast.Name):
            word = item.id
        elif isinstance(item, ast.Attribute):
            word = item.attr
        elif (isinstance(item, ast.Call) and isinstance(item.func, ast.Name) and item.func.id == "hasattr"
              and item.args and (ctx.qualified(item.args[0]) or "").startswith("torch")):
            word = "version"
        else:
            continue
        if _VERSION_WORDS.search(word):
            ctx.memo.setdefault(DEPRECATED_AMP_API.code, []).append((node.lineno, node.end_lineno))
            return


def _fallback(node: ast.AST, ctx: Context) -> bool:
    """The old API kept next to the new one for older torch versions (try/except, a version
    test, `x if new else old`)."""
    line = node.lineno  # type: ignore[attr-defined]
    if any(start <= line <= (end or start) for start, end in ctx.memo.get(DEPRECATED_AMP_API.code, [])):
        return True
    root = node.func if isinstance(node, ast.Call) else node
    if isinstance(root, ast.Name) and root.id in ctx.memo.get("TD167-new", ()):
        return True  # bound by `from torch.amp import ...` wherever that exists
    statement = ctx.statement
    return statement is not None and any(
        isinstance(n, ast.Call) and (ctx.qualified(n.func) or "").startswith("torch.amp.") for n in ast.walk(statement))


def _deprecated_amp(func: ast.expr, call: ast.Call | None, ctx: Context) -> None:
    name = ctx.qualified(func)
    if name not in _DEPRECATED_AMP or _fallback(call or func, ctx):
        return
    replacement, device = _DEPRECATED_AMP[name]
    text = ctx.text(func)
    fix = None
    old = name.rpartition(".")[0]  # torch.cuda.amp
    if call is not None and text.endswith(name.rpartition(".")[2]) and "custom_" not in name:
        prefix = text[: len(text) - len(name) + len("torch")] if text.endswith(name[len("torch"):]) else None
        if prefix is not None and isinstance(func, ast.Attribute):
            new_func = prefix + replacement[len("torch"):]
            edits = [ctx.edit(func, new_func)]
            first = (call.args[0] if call.args else None) or (call.keywords[0] if call.keywords else None)
            if first is not None:
                start = ctx.source.char_column(first.lineno, first.col_offset)
                edits.append(Edit(first.lineno, start, first.lineno, start, f'"{device}", '))
            else:
                edits.append(ctx.add_keyword(call, f'"{device}"'))
            fix = Fix(title=f'Use `{replacement}("{device}", ...)`', edits=tuple(edits), safe=False)
    ctx.report(DEPRECATED_AMP_API, call or func,
               fields={"old": f"{old}.{name.rpartition('.')[2]}", "new": replacement, "device": device}, fix=fix)


_TYPOS = frozenset({"require_grad", "requires_grads", "require_grads", "required_grad", "requries_grad",
                    "requires_gard", "requiers_grad", "requieres_grad", "requires_grad_", "reqires_grad"})


@lint_check(REQUIRES_GRAD_TYPO, ast.Assign, needs_torch=False)
def requires_grad_typo(node: ast.Assign, ctx: Context) -> None:
    for target in node.targets:
        if isinstance(target, ast.Attribute) and target.attr in _TYPOS:
            end = ctx.source.char_column(target.end_lineno, target.end_col_offset)  # type: ignore[arg-type]
            line = target.end_lineno
            edit = Edit(line, end - len(target.attr), line, end, "requires_grad")  # type: ignore[arg-type]
            ctx.report(REQUIRES_GRAD_TYPO, target,
                       fields={"attribute": target.attr, "target": ctx.text(target.value)},
                       fix=Fix(title="Rename to `requires_grad`", edits=(edit,)))


_COPIES = frozenset({"to", "cuda", "double", "float", "half", "bfloat16", "type"})


@lint_check(REQUIRES_GRAD_ON_COPY, ast.Call, names=_COPIES)
def requires_grad_then_copied(node: ast.Call, ctx: Context) -> None:
    func = node.func
    if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Call):
        return
    made = func.value
    if isinstance(made.func, ast.Attribute) and made.func.attr == "requires_grad_":
        made = made.func.value  # type: ignore[assignment]
        trainable = True
    else:
        trainable = literal(keyword(made, "requires_grad")) is True
    if not trainable or not isinstance(made, ast.Call):
        return
    name = ctx.qualified(made.func) or ""
    if not name.startswith("torch.") or name.startswith("torch.nn.") or _same_dtype(made, name, node, ctx):
        return
    statement = ctx.statement
    if (isinstance(statement, ast.Assign) and _chained_from(statement.value, node) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)):
        ctx.memo.setdefault(REQUIRES_GRAD_ON_COPY.code, []).append((ctx.scope, statement.targets[0].id, node, func.attr))
    else:
        ctx.report(REQUIRES_GRAD_ON_COPY, node, fields={"call": ctx.text(node), "method": func.attr})


def _chained_from(value: ast.expr, node: ast.Call) -> bool:
    """`value` is `node`, or method calls on it (`node.requires_grad_(True)`): the same tensor."""
    while value is not node and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        value = value.func.value
    return value is node


#: factories whose result has the default dtype (float32 unless the file changes it) when no dtype is given
_DEFAULT_DTYPE_FACTORIES = frozenset({"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty",
                                      "torch.full", "torch.linspace", "torch.logspace", "torch.eye"})
_DTYPE_NAMES = {"torch.float32": "float32", "torch.float": "float32", "torch.float64": "float64",
                "torch.double": "float64", "torch.float16": "float16", "torch.half": "float16",
                "torch.bfloat16": "bfloat16"}
_CONVERSIONS = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16"}


def _same_dtype(made: ast.Call, factory: str, copy: ast.Call, ctx: Context) -> bool:
    """`torch.zeros(n, requires_grad=True).float()`: converting to the dtype the tensor already
    has returns the tensor itself (still a leaf, checked on torch 2.13), not a copy."""
    method = copy.func.attr  # type: ignore[attr-defined]
    target: str | None
    if method in _CONVERSIONS:
        target = _CONVERSIONS[method]
    elif method == "to" and len(copy.args) == 1 and not copy.keywords:
        target = _DTYPE_NAMES.get(ctx.qualified(copy.args[0]) or "")
    else:
        return False
    given = keyword(made, "dtype")
    if given is not None:
        source = _DTYPE_NAMES.get(ctx.qualified(given) or "")
    elif factory in _DEFAULT_DTYPE_FACTORIES and not _sets_default_dtype(ctx):
        source = "float32"
    else:
        return False
    return source is not None and source == target


_SET_DEFAULT = re.compile("set_default")


def _sets_default_dtype(ctx: Context) -> bool:
    """The file calls `torch.set_default_dtype(...)` (or names another `set_default...`): the
    default dtype may not be float32. Once per file; a comment or a string saying so is no call."""
    sets = ctx.memo.get("TD169-set-default")
    if sets is None:
        sets = ctx.memo["TD169-set-default"] = "set_default" in ctx.source.text and spells(ctx.module_scope.node, _SET_DEFAULT)
    return sets


@lint_check(REQUIRES_GRAD_ON_COPY, FILE_END)
def report_copies_used_as_weights(tree: ast.Module, ctx: Context) -> None:
    """`x = torch.rand(n, requires_grad=True).to(device)` used only as an input (`model(x)`,
    `x * 2`) is a tensor that lets gradients flow, not a weight: its own .grad is never needed."""
    for scope, variable, node, method in ctx.memo.get(REQUIRES_GRAD_ON_COPY.code, []):
        if _used_as_weight(scope.node, variable, ctx) and not _retains_grad(scope.node, variable):
            ctx.report(REQUIRES_GRAD_ON_COPY, node, fields={"call": ctx.text(node), "method": method})


def _retains_grad(function: ast.AST, variable: str) -> bool:
    """`x.retain_grad()`: the author knows `x` is not a leaf and asks for its `.grad` anyway."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "retain_grad"
               and isinstance(n.func.value, ast.Name) and n.func.value.id == variable for n in ast.walk(function))


_COLLECTS = frozenset({"append", "extend", "insert", "add"})


def _used_as_weight(function: ast.AST, variable: str, ctx: Context) -> bool:
    """Some use of `variable` could need it to be a leaf: its `.grad` is read, an optimizer gets
    it, it is collected, returned or stored. Only uses as an input to a call or an operator are not."""
    for parent in ast.walk(function):
        for child in ast.iter_child_nodes(parent):
            if not (isinstance(child, ast.Name) and child.id == variable and isinstance(child.ctx, ast.Load)):
                continue
            if isinstance(parent, ast.Attribute):
                if parent.attr == "grad":
                    return True
            elif isinstance(parent, ast.Call) and parent.func is not child:
                callee = parent.func
                if (ctx.qualified(callee) or "").startswith("torch.optim.") or (
                        isinstance(callee, ast.Attribute) and callee.attr in _COLLECTS):
                    return True
            elif not isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.keyword)):
                return True
    return False


#: reductions that, called without a dimension, return a 0-dim tensor
_FULL_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "norm", "std", "var", "median"})
#: steps that keep a tensor 0-dim (`loss.data`, `loss.cpu()`, `loss.detach()`)
_KEEPS_SHAPE = frozenset({"data", "cpu", "detach", "cuda", "float", "double", "clone"})


@lint_check(ZERO_DIM_INDEX, ast.Subscript)
def zero_dim_index(node: ast.Subscript, ctx: Context) -> None:
    index = node.slice
    if not isinstance(node.ctx, ast.Load) or not (isinstance(index, ast.Constant) and type(index.value) is int and index.value == 0):
        return
    base = node.value
    while True:  # through `.data`, `.cpu()`, `.detach()`
        if isinstance(base, ast.Attribute) and base.attr in _KEEPS_SHAPE:
            base = base.value
        elif (isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and base.func.attr in _KEEPS_SHAPE
              and not base.args and not base.keywords):
            base = base.func.value
        else:
            break
    why = _zero_dim(base, ctx)
    if why is None:
        return
    fixed = f"{ctx.text(base)}.item()"
    ctx.report(ZERO_DIM_INDEX, node, fields={"expression": ctx.text(node), "why": why, "fixed": fixed},
               fix=Fix(title=f"Use `{fixed}`", edits=(ctx.edit(node, fixed),)))


def _zero_dim(value: ast.expr, ctx: Context) -> str | None:
    """Why `value` is a 0-dim tensor, or None when it may have a dimension."""
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _FULL_REDUCTIONS
            and not value.args and not value.keywords and ctx.qualified(value.func) is None):
        return f"`.{value.func.attr}()` without a dimension reduces to one number"
    kind = ctx.kind(value)
    if kind is not None and kind.tag == "loss" and _reduced(kind.node, ctx):
        return "a reduced loss is a single number"
    if isinstance(value, ast.Name) and _backward_of(value.id, ctx):
        return f"`{value.id}.backward()` is called without a gradient, so `{value.id}` is a single number"
    return None


def _reduced(call: ast.AST | None, ctx: Context) -> bool:
    """The loss call (or the loss module it calls) neither says `reduction='none'` nor `reduce=False`."""
    if not isinstance(call, ast.Call):
        return False
    calls = [call]
    made = ctx.kind(call.func)
    if made is not None and made.tag == "loss_fn" and isinstance(made.node, ast.Call):
        calls.append(made.node)
    for each in calls:
        reduction = keyword(each, "reduction")
        if reduction is not None and literal(reduction) not in ("mean", "sum"):
            return False
        reduce = keyword(each, "reduce")
        if reduce is not None and literal(reduce) is not True:
            return False
    return True


def _backward_of(name: str, ctx: Context) -> bool:
    """`name.backward()` with no gradient in this function, and `name` is computed there (not a
    parameter): backward without a gradient only runs on a single number."""
    scope = ctx.scope.node
    if name in ctx.scope.params or "backward" not in ctx.source.text:  # no call spells it: not walked
        return False
    backward = assigned = False
    for node in ast.walk(scope):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "backward"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == name
                and not node.args and keyword(node, "gradient") is None):
            backward = True
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            if not isinstance(node.value, (ast.Call, ast.BinOp)) or _makes_shaped(node.value, ctx):
                return False
            assigned = True
    return backward and assigned


def _makes_shaped(value: ast.expr, ctx: Context) -> bool:
    """`torch.zeros(1)` and the like: a tensor with a dimension on purpose."""
    return isinstance(value, ast.Call) and (ctx.qualified(value.func) or "").startswith("torch.")


@lint_check(SOFTMAX_OVER_BATCH, ast.Return)
def softmax_over_batch(node: ast.Return, ctx: Context) -> None:
    """Only what `forward` returns: inside a model, softmax over dim 0 is an attention over the
    positions of a sequence-first tensor as often as a mistake."""
    if node.value is None or not ctx.scope.name.endswith(".forward") or ctx.class_info is None or not ctx.class_info.is_module:
        return
    value: ast.expr | None = node.value
    if isinstance(value, ast.Name):
        value = _last_value(value.id, node, ctx)
    if isinstance(value, ast.Call) and _normalises_dim_zero(value, ctx):
        ctx.report(SOFTMAX_OVER_BATCH, value, fields={"call": ctx.text(value)})


def _last_value(name: str, before: ast.stmt, ctx: Context) -> ast.expr | None:
    """The value of the last plain assignment to `name` above `before` in this function."""
    above = [a for a in ctx.assignments(name) if isinstance(a, ast.Assign) and len(a.targets) == 1
             and a.lineno < before.lineno]
    return max(above, key=lambda a: a.lineno).value if above else None


def _normalises_dim_zero(call: ast.Call, ctx: Context) -> bool:
    """`log_softmax` over dim 0. (A policy that returns `softmax(x, dim=0)` is as often called on
    one unbatched observation, where dim 0 is the actions: minimalRL's REINFORCE.)"""
    name = ctx.qualified(call.func)
    if name in ("torch.nn.functional.log_softmax", "torch.log_softmax"):
        dim = argument(call, "dim", 1)
    elif name is None and isinstance(call.func, ast.Attribute) and call.func.attr == "log_softmax":
        dim = argument(call, "dim", 0)
    else:
        return False
    return dim is not None and literal(dim) == 0 and not isinstance(literal(dim), bool)
