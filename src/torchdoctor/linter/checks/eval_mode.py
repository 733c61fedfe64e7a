"""TD131: a training loop switches the model to eval() and never back to train().

A loop that steps an optimizer (itself, or in the functions of this file it calls) and calls
`model.eval()` (the same way) with no `model.train()` anywhere in it trains in eval mode from
the second pass on. It is reported where `model.train()` goes (`introspect.source.training_site`):
at the start of the function that steps, before an evaluation helper returns, or at the top of
the loop. Only models that are trained count: a frozen teacher or an EMA copy put in eval() on
purpose is not flagged.
"""

from __future__ import annotations

import ast

from torchdoctor.introspect.source import training_site
from torchdoctor.linter.api import FILE_END, Context, Event, Scope, lint_check, literal
from torchdoctor.linter.steps import (
    TRACKED,
    is_backward,
    loop_events,
    order,
    parameters_owner,
    passed_to_a_call,
    reached,
    stepped_optimizer,
)
from torchdoctor.rules.mode.training_in_eval_mode import RULE as TRAINING_IN_EVAL_MODE


def _is_eval(event: Event) -> bool:
    node = event.node
    if event.receiver is None or not isinstance(node, ast.Call):
        return False
    if event.name == "eval":
        return not node.args and not node.keywords
    return event.name == "train" and bool(node.args) and literal(node.args[0]) is False


def _is_train(event: Event) -> bool:
    node = event.node
    if event.name != "train" or not isinstance(node, ast.Call):
        return False
    return not node.args or literal(node.args[0]) is not False


def _same_object(a: str | None, b: str | None) -> bool:
    """`model` and `model.module` are one model (wrapped or not); `self.model` is not `model`."""
    if a is None or b is None:
        return False
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


@lint_check(TRAINING_IN_EVAL_MODE, FILE_END, tracks=TRACKED, needs_torch=False)
def training_in_eval_mode(tree: ast.Module, ctx: Context) -> None:
    optimized = _optimized_models(ctx)
    restored_anywhere = {e.receiver for s in ctx.scopes for e in s.events if _is_train(e)}
    frozen = _frozen_models(ctx)
    reported: set[int] = set()
    for scope in ctx.scopes:
        for info in scope.loops.values():
            loop = info.node
            events = list(reached(loop_events(scope, loop), ctx))
            if not any(stepped_optimizer(e) for e, _ in events):
                continue
            backwards = [e for e, _ in events if is_backward(e)]
            for event, via in events:
                if not _is_eval(event) or id(event.node) in reported:
                    continue
                model = event.receiver
                if any(_is_train(e) and _same_object(e.receiver, model) for e, _ in events):
                    continue
                if passed_to_a_call(loop, {model or ""}, ctx):
                    continue  # a function of another module gets the model: it may call train()
                trained = (any(_same_object(model, r) for r in restored_anywhere) or model in optimized
                           or model not in frozen and _called_with_backward(model, events, backwards))
                if not trained:
                    continue
                reported.add(id(event.node))
                where = f"`{model}.eval()` at line {event.node.lineno}"
                if via is not event:
                    where += f" (in {event.scope.name if event.scope else 'a function'}() called at line {via.node.lineno})"
                step = next(e for e, _ in events if stepped_optimizer(e))
                site = training_site(tree, step.node.lineno, event.node.lineno)  # where `train()` goes
                ctx.report(TRAINING_IN_EVAL_MODE, site or via.node, fields={"where": where + " is never undone in this loop"})
            _eval_before_loop(scope, info.node, events, optimized, restored_anywhere, reported, ctx)


def _optimized_models(ctx: Context) -> set[str]:
    """Models whose `.parameters()` an optimizer of this file was built from."""
    models: set[str] = set()
    for scope in ctx.scopes:
        for event in scope.events:
            kind = event.kind
            made = kind.node if kind is not None and kind.tag == "optimizer" else None
            name = parameters_owner(made.args[0]) if isinstance(made, ast.Call) and made.args else None
            if name:
                models.add(name)
    return models


def _mode_switch(event: Event, scope: Scope) -> bool:
    """`if mode == "train": model.train() else: model.eval()`: the function is told which mode."""
    return any(_is_train(e) and _same_object(e.receiver, event.receiver) and order(event, e) is None
               for e in scope.events)


def _frozen_models(ctx: Context) -> set[str]:
    """Models a function puts in eval() (outside any loop) before a loop of its own that steps an
    optimizer: a teacher or a feature extractor frozen on purpose. Calling one next to backward()
    does not make it the trained model."""
    frozen: set[str] = set()
    for scope in ctx.scopes:
        evals = [e for e in scope.events if _is_eval(e) and not e.loops and e.receiver and not _mode_switch(e, scope)]
        if not evals:
            continue
        steps = [via for e, via in reached(scope.events, ctx) if via.loops and stepped_optimizer(e)]
        frozen.update(e.receiver for e in evals if any(order(e, s) == -1 for s in steps))  # type: ignore[misc]
    return frozen


def _called_with_backward(model: str | None, events: list[tuple[Event, Event]], backwards: list[Event]) -> bool:
    """`model(x)` runs in the same loop (and function) as a backward(), with gradients on: it is
    the trained model. (One called only under `no_grad`, such as an EMA copy drawing samples for
    a preview, is not.)"""
    for event, _ in events:
        if event.name == "call" and event.receiver == model and not event.grad_disabled:
            if any(b.scope is event.scope and b.loops == event.loops for b in backwards):
                return True
    return False


def _eval_before_loop(scope: object, loop: ast.AST, events: list[tuple[Event, Event]], optimized: set[str],
                      restored_anywhere: set[str | None], reported: set[int], ctx: Context) -> None:
    """`model.eval()` before the training loop (after loading weights, say), never undone."""
    steps = [via for e, via in events if stepped_optimizer(e)]
    if not steps or getattr(scope, "loop", lambda _: None)(loop).parent is not None:  # type: ignore[union-attr]
        return
    for event in scope.events:  # type: ignore[attr-defined]
        if not _is_eval(event) or event.loops or id(event.node) in reported:
            continue
        if not any(order(event, step) == -1 for step in steps):
            continue
        model = event.receiver
        if _mode_switch(event, scope):  # type: ignore[arg-type]
            continue
        later = [e for e in scope.events if _is_train(e) and order(event, e) == -1]  # type: ignore[attr-defined]
        if any(_same_object(e.receiver, model) for e in later):
            continue
        if any(_is_train(e) and _same_object(e.receiver, model) for e, _ in events):
            continue
        # a frozen helper (a teacher, a VAE) is put in eval() before training on purpose: only a
        # model the file optimizes or switches to train() somewhere is the trained one here
        if not (model in optimized or any(_same_object(model, r) for r in restored_anywhere)):
            continue
        reported.add(id(event.node))
        line = event.node.lineno
        ctx.report(TRAINING_IN_EVAL_MODE, event.node,
                   fields={"where": f"`{model}.eval()` at line {line}, before the training loop, is never undone"})
