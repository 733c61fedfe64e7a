"""TD124: a model the optimizer trains, called only with autograd off, whose output feeds the
loss of a training step (so the model never gets a gradient).

At the end of a file that builds a `torch.optim` optimizer from `x.parameters()`, turns
autograd off somewhere and calls backward() (all read off the text first, so most files cost
nothing), each model the optimizer is built from is looked up among the calls the walk
recorded. It is reported only when all of its calls run with autograd off, it is not frozen
with `requires_grad_(False)`, and one of those calls sits in a training step: before a
backward() of the same loop (or function), under no extra condition, with a result that flows,
assignment by assignment, into the tensor backward() is called on. A call whose output alone
makes the loss (so that backward() fails) is TD416's, not reported twice.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from torchdoctor.linter.api import FILE_END, Context, Event, Scope, dotted, lint_check
from torchdoctor.linter.names import mentions
from torchdoctor.linter.steps import TRACKED, grad_mode_block, is_backward, optimized_models
from torchdoctor.rules.grad_mode.trained_model_called_under_no_grad import RULE as TRAINED_MODEL_CALLED_UNDER_NO_GRAD


@lint_check(TRAINED_MODEL_CALLED_UNDER_NO_GRAD, FILE_END, tracks=TRACKED)
def trained_model_called_under_no_grad(tree: ast.Module, ctx: Context) -> None:
    text = ctx.source.text
    if (("no_grad" not in text and "inference_mode" not in text) or ".parameters()" not in text or "backward" not in text
            or "optim" not in text):
        return
    optimized = optimized_models(tree, ctx)
    calls: dict[str, list[Event]] = {}
    for scope in ctx.scopes:
        for event in scope.events:
            if event.name == "call" and event.receiver in optimized:
                calls.setdefault(event.receiver, []).append(event)
    models = set(optimized)
    for model, events in calls.items():
        if any(not e.grad_disabled for e in events) or _frozen(model, tree):
            continue
        crashing = ctx.memo.get("TD416-calls", set())  # backward() fails on this output: TD416 says so
        for event in events:
            if id(event.node) in crashing:
                break
            manager = _feeds_backward(event, ctx, models)
            if manager:
                ctx.report(TRAINED_MODEL_CALLED_UNDER_NO_GRAD, event.node,
                           fields={"model": model, "manager": manager, "optimizer_line": optimized[model].lineno})
                break


def _frozen(model: str, tree: ast.Module) -> bool:
    """`model.requires_grad_(False)`, or `p.requires_grad = False` in a loop over its parameters."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_"
                and dotted(node.func.value) == model):
            return True
        if isinstance(node, (ast.For, ast.AsyncFor)) and model in (_parameters_of(node.iter) or ""):
            if any(isinstance(t, ast.Attribute) and t.attr == "requires_grad"
                   for n in ast.walk(node) if isinstance(n, ast.Assign) for t in n.targets):
                return True
    return False


def _parameters_of(iterable: ast.expr) -> str | None:
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and iterable.func.attr in ("parameters", "named_parameters"):
        return dotted(iterable.func.value)
    return None


def _feeds_backward(call: Event, ctx: Context, models: set[str]) -> str:
    """The grad-mode manager's text (`torch.no_grad()`) when this call's result reaches the
    tensor a backward() of the same training step is called on; "" otherwise."""
    scope = call.scope
    if scope is None:
        return ""
    block = grad_mode_block(scope.node, call.node.lineno, ctx, enabled=False)
    if block is None:
        return ""  # off for the whole function (a decorator): not a training step
    for backward in scope.events:
        if not is_backward(backward) or backward.line <= block.end_lineno:  # type: ignore[operator]
            continue
        same_step = (backward.loops[-1:] == call.loops[-1:]) if call.loops else not backward.loops
        extra_conditions = {id(c) for c in call.conditions} - {id(c) for c in backward.conditions}
        if same_step and not extra_conditions and _reaches(call.node, block, backward, _TensorCode(scope, ctx, models)):
            return next(ctx.text(item.context_expr) for item in block.items if ctx.grad_mode(item.context_expr) is False)
    return ""


def _reaches(call: ast.AST, block: ast.With | ast.AsyncWith, backward: Event, code: _TensorCode) -> bool:
    """Whether the names assigned from `call` flow, through later assignments up to the
    backward() line, into the expression backward() is called on."""
    assigned = next((s for s in ast.walk(block) if isinstance(s, ast.Assign) and any(n is call for n in ast.walk(s.value))), None)
    if assigned is None:
        return False
    tainted = {n.id for t in assigned.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    later = sorted((s for s in _statements(code.scope) if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                    and block.end_lineno < s.lineno <= backward.line), key=lambda s: s.lineno)  # type: ignore[operator]
    for statement in later:
        if statement.value is not None and code.carries(statement.value, tainted):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            tainted |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    node = backward.node
    loss = node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else node
    return mentions(loss, tainted) or (isinstance(node, ast.Call) and any(mentions(a, tainted) for a in node.args))


@dataclass
class _TensorCode:
    """What counts as tensor code in one function: the graph flows through it."""

    scope: Scope
    ctx: Context
    models: set[str]  # the models the optimizers are built from

    def carries(self, node: ast.AST, tainted: set[str]) -> bool:
        """Whether the value of `node` is computed from a tainted name by tensor code:
        operators, tensor methods, torch functions, models and losses. A call of anything
        else (an environment's `step(action)`, NumPy) is not followed: its result is data."""
        if isinstance(node, ast.Name):
            return node.id in tainted
        if isinstance(node, ast.Call):
            func = node.func
            if self.is_tensor_function(func):
                return any(self.carries(a, tainted) for a in [*node.args, *(k.value for k in node.keywords)])
            return isinstance(func, ast.Attribute) and self.carries(func.value, tainted)  # `x.clone()`, `x.view(...)`
        return any(self.carries(child, tainted) for child in ast.iter_child_nodes(node))

    def is_tensor_function(self, func: ast.expr) -> bool:
        """`torch.*` / `F.*` functions, the optimized models, names bound to a model or a loss
        module, and functions of this file that compute with torch (`loss_function(recon, x)`)."""
        if (self.ctx.qualified(func) or "").startswith("torch."):
            return True
        name = dotted(func)
        if name is None:
            return False
        if name in self.models:
            return True
        own = self.ctx.functions.get(name)
        if own is not None:
            return self._computes_with_torch(own)
        if name.startswith("self.") and self.scope.cls is not None:
            kind = self.scope.cls.attributes.get(name[5:])
        else:
            kind = self.scope.bindings.get(name) or self.ctx.module_scope.bindings.get(name)
        return kind is not None and kind.tag in ("model", "loss_fn")


    def _computes_with_torch(self, function: Scope) -> bool:
        """A function of this file whose returned value is torch code: it returns something and
        calls `torch.*` functions."""
        body = function.node
        returns = any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(body))
        return returns and any(isinstance(n, ast.Call) and (self.ctx.qualified(n.func) or "").startswith("torch.")
                               for n in ast.walk(body))


def _statements(scope: Scope) -> Iterator[ast.stmt]:
    """The statements of the function's own code (not nested functions or classes), outermost first."""
    pending = deque(getattr(scope.node, "body", []))
    while pending:
        statement = pending.popleft()
        yield statement
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            pending.extend(getattr(statement, field, None) or [])
        for handler in getattr(statement, "handlers", []):
            pending.extend(handler.body)
