"""TD133: a trained model evaluated under no_grad in train mode (no `eval()` anywhere).

At the end of a file that builds a `torch.optim` optimizer over a model's parameters and turns
autograd off somewhere (both read off the text first, so most files cost nothing), and never
calls anything's `eval()` (read off the calls: a comment saying `model.eval()` is none), the calls of a model with dropout or batch-norm layers
made with autograd off are reported (at the start of the evaluation, where `eval()` goes),
unless they sit in the innermost loop of a training step
(a GAN's fake batch, pseudo-labels). A model a function receives as a parameter counts when
every call of that function in the file passes the same trained model.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchdoctor.introspect.source import evaluation_site
from torchdoctor.linter.api import FILE_END, Context, Scope, dotted, lint_check
from torchdoctor.linter.mode_layers import BATCHNORMS, DROPOUTS, mode_layers, switches_mode
from torchdoctor.linter.steps import TRACKED, is_backward, optimized_models, stepped_optimizer
from torchdoctor.rules.mode.evaluation_in_train_mode import RULE as EVALUATION_IN_TRAIN_MODE
from torchdoctor.rules.mode.evaluation_in_train_mode import train_mode_effects


@lint_check(EVALUATION_IN_TRAIN_MODE, FILE_END, tracks=TRACKED)
def evaluation_in_train_mode(tree: ast.Module, ctx: Context) -> None:
    text = ctx.source.text
    if ".parameters()" not in text or "optim" not in text or ("no_grad" not in text and "inference_mode" not in text):
        return  # text tests only skip work when a word is absent: `# model.eval()` is no call
    trained = set(optimized_models(tree, ctx))
    if not trained or switches_mode(ctx):
        return
    # the innermost loops that run backward() or step(): a no-grad call there is part of training
    training_loops = {id(e.loops[-1]) for scope in ctx.scopes for e in scope.events
                      if e.loops and (is_backward(e) or stepped_optimizer(e))}
    reported: set[tuple[str, str]] = set()
    for scope in ctx.scopes:
        for call, loop in _no_grad_calls(scope, ctx):
            name = dotted(call.func)
            if name is None or (scope.name, name) in reported or (loop is not None and id(loop) in training_loops):
                continue
            model, layers = _through_parameter(scope, name, ctx) if name in scope.params else (name, mode_layers(scope, name, ctx))
            effects = train_mode_effects(not DROPOUTS.isdisjoint(layers), not BATCHNORMS.isdisjoint(layers))
            if effects and model in trained:
                reported.add((scope.name, name))
                site = evaluation_site(tree, call.lineno)  # where `eval()` goes: the evaluation's start
                at: ast.AST = site if site is not None and site.lineno != call.lineno else call
                called = f" (called at line {call.lineno})" if at is not call else ""
                ctx.report(EVALUATION_IN_TRAIN_MODE, at, fields={"model": f"`{name}`{called}", "effects": effects})


def _no_grad_calls(scope: Scope, ctx: Context) -> Iterator[tuple[ast.Call, ast.AST | None]]:
    """Calls `name(...)` / `self.name(...)` in this scope's own code made with autograd off,
    with their innermost loop."""
    body = getattr(scope.node, "body", [])
    yield from _walk(body, scope.grad_disabled, None, ctx)


def _walk(statements: list[ast.stmt], disabled: bool, loop: ast.AST | None, ctx: Context) -> Iterator[tuple[ast.Call, ast.AST | None]]:
    for statement in statements:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # their own scopes
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            yield from _walk(statement.body, ctx.disabled_inside(statement, disabled), loop, ctx)
            continue
        if isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
            yield from _calls(statement.iter if isinstance(statement, (ast.For, ast.AsyncFor)) else statement.test, disabled, loop)
            yield from _walk(statement.body, disabled, statement, ctx)
            yield from _walk(statement.orelse, disabled, loop, ctx)
            continue
        blocks = [getattr(statement, name) for name in ("body", "orelse", "finalbody") if isinstance(getattr(statement, name, None), list)]
        handlers = [h.body for h in getattr(statement, "handlers", [])]
        if blocks or handlers:
            for field, value in ast.iter_fields(statement):
                if field not in ("body", "orelse", "finalbody", "handlers") and isinstance(value, ast.AST):
                    yield from _calls(value, disabled, loop)
            for block in [*blocks, *handlers]:
                yield from _walk(block, disabled, loop, ctx)
            continue
        yield from _calls(statement, disabled, loop)


def _calls(node: ast.AST, disabled: bool, loop: ast.AST | None) -> Iterator[tuple[ast.Call, ast.AST | None]]:
    if not disabled:
        return
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call):
            func = inner.func
            if isinstance(func, ast.Name) or (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
                yield inner, loop


def _through_parameter(scope: Scope, param: str, ctx: Context) -> tuple[str, frozenset[str]]:
    """The trained model a parameter receives: `def test(model, ...)` called as `test(net, ...)`
    with `net = Net()`, when every call of the function in this file passes the same one."""
    if "." in scope.name:
        return "", frozenset()
    index = scope.params.index(param)
    passed = set()
    for caller in ctx.scopes:
        for call in _calls_of(caller, scope.name):
            argument = call.args[index] if index < len(call.args) else None
            name = argument.id if isinstance(argument, ast.Name) else None
            passed.add((name or "", mode_layers(caller, name, ctx) if name else frozenset()))
    return next(iter(passed)) if len(passed) == 1 else ("", frozenset())


def _calls_of(scope: Scope, function: str) -> Iterator[ast.Call]:
    for event in scope.events:
        if event.name == "call" and event.receiver == function and isinstance(event.node, ast.Call):
            yield event.node


