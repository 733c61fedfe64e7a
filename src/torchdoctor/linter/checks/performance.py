"""Wasted time and memory: evaluation that records the autograd graph (TD161), a tensor copied
through a Python list or NumPy (TD162), a Python loop over the samples of a batch in forward
(TD163)."""

from __future__ import annotations

import ast

from torchdoctor.linter.api import FILE_END, Context, Event, Scope, lint_check, literal
from torchdoctor.linter.flow import held_out_loader, loop_iterable
from torchdoctor.linter.names import dotted
from torchdoctor.linter.steps import TRACKED, grad_mode_block, is_backward, loop_events, optimized_models, reached
from torchdoctor.rules.memory.evaluation_with_grad import RULE as EVALUATION_WITH_GRAD
from torchdoctor.rules.performance.per_sample_loop import RULE as PER_SAMPLE_LOOP
from torchdoctor.rules.performance.tensor_via_python import RULE as TENSOR_VIA_PYTHON

_REBUILD = frozenset({"torch.tensor", "torch.as_tensor", "torch.Tensor", "torch.FloatTensor", "torch.LongTensor"})


@lint_check(EVALUATION_WITH_GRAD, FILE_END, tracks=TRACKED, needs_torch=False)
def evaluation_with_grad(tree: ast.Module, ctx: Context) -> None:
    for scope in ctx.scopes:
        at_top = scope is ctx.module_scope
        if scope.grad_disabled or scope.cls is not None or not at_top and scope.parent is not ctx.module_scope:
            continue
        events = scope.events
        for mode in events:
            if mode.name != "eval" or mode.receiver is None or mode.loops:
                continue
            # a script's own evaluation: what runs after `model.eval()` (up to `model.train()`);
            # a function: all of it
            after = _until_train(events, mode) if at_top else events
            if any(is_backward(e) or e.name in ("step", "grad", "input_grad") for e in after):
                break  # it trains, or it needs gradients on purpose (saliency maps, adversarial inputs)
            uses = [e for e in after if e.name == "call" and e.receiver == mode.receiver and not e.grad_disabled
                    and any(_over_loader(scope, loop) for loop in e.loops)]
            if not uses or not (at_top or _called_with_grad(scope, ctx)):
                continue
            where = _evaluation_with_grad_at(uses[0], scope, ctx)
            in_block = isinstance(where, (ast.With, ast.AsyncWith))
            if at_top:
                ctx.report(EVALUATION_WITH_GRAD, where, variant="script-block" if in_block else "script",
                           fields={"model": mode.receiver, "eval_line": mode.line})
            else:
                ctx.report(EVALUATION_WITH_GRAD, where, variant="block" if in_block else None,
                           fields={"model": mode.receiver, "function": scope.name})
            ctx.memo.setdefault("TD161-reported", set()).add(id(scope))
            break
    _held_out_with_grad(tree, ctx)


def _held_out_with_grad(tree: ast.Module, ctx: Context) -> None:
    """Without `eval()`: a loop over held-out data (a DataLoader over a dataset built with
    `train=False`, or named `test_loader`, `val_set`, ...) that runs a model an optimizer of the
    file trains, with autograd on, and neither backpropagates nor asks for gradients."""
    held_out: set[int] = ctx.memo.get("TD161-held-out", set())
    if not held_out:
        return
    reported: set[int] = ctx.memo.get("TD161-reported", set())
    trained = optimized_models(tree, ctx)
    for scope in ctx.scopes:
        at_top = scope is ctx.module_scope
        if id(scope) in reported or scope.grad_disabled or scope.cls is not None or not at_top and scope.parent is not ctx.module_scope:
            continue
        for info in scope.loops.values():
            if id(info.node) not in held_out:
                continue
            events = [e for e, _ in reached(loop_events(scope, info.node), ctx)]
            if any(is_backward(e) or e.name in ("step", "grad", "input_grad") for e in events):
                continue
            uses = [e for e in events if e.name == "call" and e.receiver in trained and not e.grad_disabled and e.scope is scope]
            if not uses or not (at_top or _called_with_grad(scope, ctx)):
                continue
            where = _evaluation_with_grad_at(uses[0], scope, ctx)
            ctx.report(EVALUATION_WITH_GRAD, where, variant="held-out",
                       fields={"model": uses[0].receiver, "loader": info.iter_name or "the loader"})


@lint_check(EVALUATION_WITH_GRAD, ast.For, needs_torch=False)
def held_out_loop(node: ast.For, ctx: Context) -> None:
    """Remember the loops over held-out data (`flow.held_out_loader`)."""
    iterable = loop_iterable(node.iter, ctx)
    kind = ctx.kind(iterable) if iterable is not None else None
    if kind is not None and kind.tag == "dataloader" and held_out_loader(iterable, kind, ctx):  # type: ignore[arg-type]
        ctx.memo.setdefault("TD161-held-out", set()).add(id(node))


def _until_train(events: list[Event], mode: Event) -> list[Event]:
    later = [e for e in events if e.line > mode.line]
    end = next((i for i, e in enumerate(later) if e.name == "train" and e.receiver == mode.receiver), len(later))
    return later[:end]


def _evaluation_with_grad_at(use: Event, scope: Scope, ctx: Context) -> ast.AST:
    """Where the evaluation turns (or leaves) autograd on: a `with torch.enable_grad()` around
    the model's call, else the loop over the DataLoader that the `no_grad()` should wrap."""
    enabling = grad_mode_block(scope.node, use.line, ctx, enabled=True)
    if enabling is not None:
        return enabling
    return next(loop for loop in use.loops if _over_loader(scope, loop))


@lint_check(EVALUATION_WITH_GRAD, ast.Assign, needs_torch=False)
def input_gradient_asked(node: ast.Assign, ctx: Context) -> None:
    """`x.requires_grad = True`: the function differentiates with respect to its inputs."""
    if any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in node.targets):
        ctx.record("input_grad", node)


@lint_check(EVALUATION_WITH_GRAD, ast.Call, names={"requires_grad_"}, needs_torch=False)
def input_gradient_asked_in_place(node: ast.Call, ctx: Context) -> None:
    if not node.args or literal(node.args[0]) is not False:
        ctx.record("input_grad", node)


def _over_loader(scope: Scope, loop: ast.AST) -> bool:
    info = scope.loop(loop)
    return info is not None and info.iterates == "dataloader"


def _called_with_grad(scope: Scope, ctx: Context) -> bool:
    """The function is called in this file, and at least once with gradients enabled."""
    calls = [e for s in ctx.scopes for e in s.events if e.name == "call" and e.receiver == scope.name]
    return bool(calls) and any(not e.grad_disabled and not (e.scope is not None and e.scope.grad_disabled) for e in calls)


@lint_check(TENSOR_VIA_PYTHON, ast.Call, names={"tensor", "as_tensor", "Tensor", "FloatTensor", "LongTensor"})
def tensor_via_python(node: ast.Call, ctx: Context) -> None:
    if not node.args or ctx.qualified(node.func) not in _REBUILD:
        return
    inner = node.args[0]
    if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr in ("tolist", "numpy"):
        ctx.report(TENSOR_VIA_PYTHON, node,
                   fields={"call": ctx.text(node), "via": inner.func.attr, "source": ctx.text(inner.func.value)})


@lint_check(PER_SAMPLE_LOOP, ast.For)
def per_sample_loop(node: ast.For, ctx: Context) -> None:
    if not ctx.in_forward or not isinstance(node.target, ast.Name):
        return
    batch = _batch_size_of(node.iter)
    if batch is None or batch not in ctx.scope.params or batch == "self":
        return
    index = node.target.id
    for child in ast.walk(ast.Module(body=node.body, type_ignores=[])):
        if (isinstance(child, ast.Subscript) and dotted(child.value) == batch and isinstance(child.slice, ast.Name)
                and child.slice.id == index):
            ctx.report(PER_SAMPLE_LOOP, node, fields={"batch": batch, "index": index})
            return


def _batch_size_of(node: ast.expr) -> str | None:
    """`x` for `range(x.size(0))` and `range(x.shape[0])` (not `len(x)`: that may be a list)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range" and len(node.args) == 1):
        return None
    size = node.args[0]
    if (isinstance(size, ast.Call) and isinstance(size.func, ast.Attribute) and size.func.attr == "size"
            and len(size.args) == 1 and isinstance(size.args[0], ast.Constant) and size.args[0].value == 0):
        return dotted(size.func.value)
    if (isinstance(size, ast.Subscript) and isinstance(size.value, ast.Attribute) and size.value.attr == "shape"
            and isinstance(size.slice, ast.Constant) and size.slice.value == 0):
        return dotted(size.value.value)
    return None
