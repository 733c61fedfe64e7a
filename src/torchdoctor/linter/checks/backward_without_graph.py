"""TD416 from the source: backward() on a loss computed from a model's output that was made with
autograd off: `with torch.no_grad(): output = model(x)`, then `loss = criterion(output, y)` and
`loss.backward()` in the same function. The loss has no graph, so backward() fails with
"element 0 of tensors does not require grad and does not have a grad_fn".

Read in walk order, per function: the names a model call binds inside a `with` that turns
autograd off (also through `.view()`-style calls, and every name of a tuple target:
`logits, loss = model(x, y)`); a later binding with autograd on, or `requires_grad_()`, forgets
them. A loss counts
only when it is a loss function's value whose every argument is such a name or labels (drawn
from the DataLoader, named so, or a constant made by `torch.full`/`ones`/`zeros`...), or the
model's own loss; anything else that could carry a graph (a second model's output, a
regulariser added) leaves it alone.
"""

from __future__ import annotations

import ast

from torchdoctor.linter.api import Context, dotted, lint_check
from torchdoctor.linter.flow import LOSS_FUNCTIONS, holds_labels
from torchdoctor.linter.steps import grad_mode_block, optimized_models
from torchdoctor.rules.grad_mode.backward_without_graph import RULE as BACKWARD_WITHOUT_GRAPH
from torchdoctor.rules.grad_mode.trained_model_called_under_no_grad import RULE as TRAINED_UNDER_NO_GRAD

#: both rules report at a `backward()` call: a file that never spells one is not read for them
_AT_BACKWARD = ("backward",)
#: calls that keep a model's output what it is (no graph is added by reshaping)
_KEEPS = frozenset({"view", "reshape", "flatten", "squeeze", "unsqueeze", "contiguous", "permute", "transpose", "float"})
#: tensors made without a graph: targets such as dcgan's `label = torch.full(...)`
_CONSTANTS = frozenset({"torch.full", "torch.ones", "torch.zeros", "torch.ones_like", "torch.zeros_like", "torch.full_like",
                        "torch.tensor", "torch.arange", "torch.randint"})


def _unwrapped(value: ast.expr) -> ast.expr:
    """The value under its reshaping calls (`model(x).view(-1)` -> `model(x)`)."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _KEEPS:
        value = value.func.value
    return value


def _model_call(value: ast.expr, ctx: Context) -> ast.Call | None:
    value = _unwrapped(value)
    if isinstance(value, ast.Call) and ctx.qualified(value.func) is None:
        kind = ctx.kind(value.func)
        if kind is not None and kind.tag == "model":
            return value
    return None


def _state(ctx: Context) -> dict[str, tuple[ast.Call, str]]:
    """name -> (the no-grad model call it comes from, how: "output" or the loss it is)."""
    return ctx.memo.setdefault("TD416", {}).setdefault(id(ctx.scope), {})


@lint_check((BACKWARD_WITHOUT_GRAPH, TRAINED_UNDER_NO_GRAD), ast.Assign, needs_text=_AT_BACKWARD)
def no_grad_value_bound(node: ast.Assign, ctx: Context) -> None:
    names = _state(ctx)
    sums = ctx.memo.setdefault("TD124-sums", {}).setdefault(id(ctx.scope), {})
    if not names and not sums and not ctx.grad_disabled:
        return  # autograd on and nothing held in this scope: no binding here can start or end one
    for target in node.targets:  # `output.requires_grad = True`: it gets a graph from here on
        if isinstance(target, ast.Attribute) and target.attr == "requires_grad" and isinstance(target.value, ast.Name):
            names.pop(target.value.id, None)
    targets = [n.id for t in node.targets if not isinstance(t, ast.Attribute) for n in ast.walk(t) if isinstance(n, ast.Name)]
    made = _model_call(node.value, ctx) if ctx.grad_disabled and not ctx.scope.grad_disabled else None
    if made is not None:
        for name in targets:
            names[name] = (made, "output")
        return
    loss = _loss_of(node.value, names, ctx) if not ctx.grad_disabled else None
    term = _constant_term(node.value, names) if loss is None and not ctx.grad_disabled else None
    for name in targets:
        sums.pop(name, None)
        if loss is not None:
            names[name] = loss
        else:
            names.pop(name, None)
            if term is not None:
                sums[name] = term


def _constant_term(value: ast.expr, names: dict[str, tuple[ast.Call, str]]) -> tuple[str, ast.Call, str] | None:
    """`d_loss_real + d_loss_fake` where `d_loss_real` is a loss of a no-grad output and the other
    term is not: (that term's name, the no-grad call, the loss)."""
    terms: list[ast.expr] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            stack += [node.left, node.right]
        else:
            terms.append(node)
    held = [t.id for t in terms if isinstance(t, ast.Name) and t.id in names and names[t.id][1] != "output"]
    if not held or len(held) == len(terms):
        return None
    made, how = names[held[0]]
    return held[0], made, how


def _loss_of(value: ast.expr, names: dict[str, tuple[ast.Call, str]], ctx: Context) -> tuple[ast.Call, str] | None:
    """The no-grad model call a loss function's value is computed from, when nothing else it
    is given could carry a graph."""
    if not isinstance(value, ast.Call) or not value.args:
        return None
    qualified = ctx.qualified(value.func) or ""
    kind = ctx.kind(value.func)
    is_loss = (qualified.startswith("torch.nn.functional.") and qualified.rpartition(".")[2] in LOSS_FUNCTIONS
               or kind is not None and kind.tag == "loss_fn")
    if not is_loss:
        return None
    source = None
    for argument in [*value.args, *(k.value for k in value.keywords if k.arg in ("input", "target"))]:
        root = _unwrapped(argument)
        if isinstance(root, ast.Name) and root.id in names:
            source = names[root.id][0]
        elif not (holds_labels(argument, ctx) or _constant(argument, ctx)):
            return None
    return (source, ctx.text(value)) if source is not None else None


def _constant(node: ast.expr, ctx: Context) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        kind = ctx.kind(node)
        made = kind.node if kind is not None else None
        return isinstance(made, ast.Call) and ctx.qualified(made.func) in _CONSTANTS
    return isinstance(node, ast.Call) and ctx.qualified(node.func) in _CONSTANTS


@lint_check((BACKWARD_WITHOUT_GRAPH, TRAINED_UNDER_NO_GRAD), ast.Call, names=("backward", "requires_grad_"),
       needs_text=_AT_BACKWARD)
def backward_of_no_grad_value(node: ast.Call, ctx: Context) -> None:
    if ctx.grad_disabled or not isinstance(node.func, ast.Attribute):
        return
    if node.func.attr == "requires_grad_":
        if isinstance(node.func.value, ast.Name):
            _state(ctx).pop(node.func.value.id, None)  # made a leaf that requires grad
        return
    target = node.func.value
    if isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute) and target.func.attr == "scale" and target.args:
        target = target.args[0]  # scaler.scale(loss).backward()
    if isinstance(target, ast.Name) and target.id in ctx.memo.get("TD124-sums", {}).get(id(ctx.scope), {}):
        _constant_term_backpropagated(node, target.id, ctx)
        return
    if not isinstance(target, ast.Name) or target.id not in _state(ctx):
        return
    made, how = _state(ctx)[target.id]
    block = grad_mode_block(ctx.scope.node, made.lineno, ctx, enabled=False)
    if block is None:
        return
    manager = next(ctx.text(item.context_expr) for item in block.items if ctx.grad_mode(item.context_expr) is False)
    model = dotted(made.func) or "the model"
    value = f"`{target.id}` (`{how[:60]}`)" if how != "output" else f"`{target.id}`"
    ctx.memo.setdefault("TD416-calls", set()).add(id(made))  # TD124 says nothing more about this call
    ctx.report(BACKWARD_WITHOUT_GRAPH, block, fields={"why": (
        f"{value} comes from `{model}(...)` called under `{manager}` at line {block.lineno}, so `{ctx.text(node)}` "
        f"at line {node.lineno} fails with \"element 0 of tensors does not require grad and does not have a grad_fn\"")})


def _constant_term_backpropagated(node: ast.Call, total: str, ctx: Context) -> None:
    """backward() of a sum one of whose loss terms comes from a no-grad call of a model the
    file trains: that term is a constant, the model learns from the other terms only."""
    term, made, how = ctx.memo["TD124-sums"][id(ctx.scope)][total]
    model = dotted(made.func)
    block = grad_mode_block(ctx.scope.node, made.lineno, ctx, enabled=False)
    if block is None or model is None or model not in optimized_models(ctx.module_scope.node, ctx):  # type: ignore[arg-type]
        return
    manager = next(ctx.text(item.context_expr) for item in block.items if ctx.grad_mode(item.context_expr) is False)
    ctx.report(TRAINED_UNDER_NO_GRAD, block, variant="constant-term", fields={
        "term": term, "how": how[:60], "model": model, "manager": manager, "block_line": block.lineno,
        "total": total, "backward": ctx.text(node), "backward_line": node.lineno})
