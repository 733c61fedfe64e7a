"""Grad mode misuse: a loss computed and backpropagated under no_grad (TD151), a grad-mode
context manager called as a plain statement, which does nothing (TD153)."""

from __future__ import annotations

import ast

from torchdoctor.linter.api import Context, lint_check
from torchdoctor.linter.steps import grad_mode_block
from torchdoctor.rules.grad_mode.backward_under_no_grad import RULE as BACKWARD_UNDER_NO_GRAD
from torchdoctor.rules.grad_mode.grad_mode_call_without_with import RULE as GRAD_MODE_CALL_WITHOUT_WITH

#: context managers that only act inside `with`; as a bare statement they are no-ops
_CONTEXT_ONLY = {
    "torch.no_grad": "torch.no_grad()",
    "torch.enable_grad": "torch.enable_grad()",
    "torch.inference_mode": "torch.inference_mode()",
    "torch.autograd.no_grad": "torch.no_grad()",
    "torch.autocast": "torch.autocast(...)",
    "torch.amp.autocast": "torch.autocast(...)",
    "torch.cuda.amp.autocast": "torch.autocast(\"cuda\")",
    "torch.cpu.amp.autocast": "torch.autocast(\"cpu\")",
}


def _made_without_grad(ctx: Context) -> set[str]:
    """Names assigned while grad mode was off, in the current function."""
    store: dict[int, set[str]] = ctx.memo.setdefault(BACKWARD_UNDER_NO_GRAD.code, {})
    return store.setdefault(id(ctx.scope), set())


@lint_check(BACKWARD_UNDER_NO_GRAD, ast.Assign)
def remember_values_made_without_grad(node: ast.Assign, ctx: Context) -> None:
    names = _made_without_grad(ctx)
    for target in node.targets:
        if isinstance(target, ast.Name):
            (names.add if ctx.grad_disabled else names.discard)(target.id)


@lint_check(BACKWARD_UNDER_NO_GRAD, ast.Call, names={"backward"})
def backward_under_no_grad(node: ast.Call, ctx: Context) -> None:
    if not ctx.grad_disabled or not isinstance(node.func, ast.Attribute):
        return
    loss = node.func.value
    made_here = isinstance(loss, ast.Call) or isinstance(loss, ast.Name) and loss.id in _made_without_grad(ctx)
    if not made_here:
        return
    decorator = _grad_off_decorator(node, ctx)
    if decorator is None:
        ctx.report(BACKWARD_UNDER_NO_GRAD, node, fields={"loss": ctx.text(loss)})
        return
    function = _function_name(ctx)
    ctx.report(BACKWARD_UNDER_NO_GRAD, decorator, variant="decorator", fields={
        "decorator": ctx.text(decorator), "function": function, "loss": ctx.text(loss), "backward_line": node.lineno})


def _function_name(ctx: Context) -> str:
    node = ctx.scope.node if ctx.scope is not None else None
    return node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else "this function"


def _grad_off_decorator(node: ast.Call, ctx: Context) -> ast.expr | None:
    """The decorator of the current function that turns autograd off, when that (and no
    `with` block inside the function) is why `node` runs without gradients: the line to change."""
    function = ctx.scope.node if ctx.scope is not None else None
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    if grad_mode_block(function, node.lineno, ctx, enabled=False) is not None:
        return None
    return next((d for d in function.decorator_list if ctx.grad_mode(d) is False), None)


@lint_check(GRAD_MODE_CALL_WITHOUT_WITH, ast.Expr)
def context_manager_as_statement(node: ast.Expr, ctx: Context) -> None:
    call = node.value
    if isinstance(call, ast.Call):
        name = ctx.qualified(call.func)
        if name in _CONTEXT_ONLY:
            ctx.report(GRAD_MODE_CALL_WITHOUT_WITH, node,
                       fields={"call": ctx.text(call), "manager": _CONTEXT_ONLY[name]})
