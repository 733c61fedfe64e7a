"""The order of a training step: backward, reset, clip, unscale, step (TD110-TD113, TD115,
TD148, TD155-TD157).

All of these read the events of each function (see `lint.steps`): calls in source order with
where they sit, so "A runs before B in the same iteration" is a comparison of paths, not a
second walk over the tree.
"""

from __future__ import annotations

import ast

from torchdoctor.linter.api import FILE_END, Context, Event, Scope, lint_check, literal, looks_like_optimizer
from torchdoctor.linter.manual_updates import manual_update
from torchdoctor.linter.names import dotted, keyword, terminal
from torchdoctor.linter.steps import (
    TRACKED,
    assigned_names,
    called_in_loops,
    has_closure,
    inside,
    is_backward,
    is_clip,
    is_grad_reset,
    is_gradient_computation,
    is_scaled_backward,
    is_scaler,
    is_scaler_step,
    loop_events,
    optimized_models,
    order,
    parameters_owner,
    passed_to_a_call,
    reached,
    resets_gradients,
    scale_call,
    stepped_optimizer,
)
from torchdoctor.linter.unstepped import never_stepped, remember
from torchdoctor.rules.memory.retain_graph_in_loop import RULE as RETAIN_GRAPH_IN_LOOP
from torchdoctor.rules.optimizer.accumulation_reset_every_micro_batch import (
    RULE as ACCUMULATION_RESET_EVERY_MICRO_BATCH,
)
from torchdoctor.rules.optimizer.backward_missing import RULE as BACKWARD_MISSING
from torchdoctor.rules.optimizer.clip_grad_before_backward import RULE as CLIP_GRAD_BEFORE_BACKWARD
from torchdoctor.rules.optimizer.clip_grad_on_scaled_gradients import RULE as CLIP_GRAD_ON_SCALED_GRADIENTS
from torchdoctor.rules.optimizer.missing_zero_grad import RULE as MISSING_ZERO_GRAD
from torchdoctor.rules.optimizer.optimizer_created_in_loop import RULE as OPTIMIZER_CREATED_IN_LOOP
from torchdoctor.rules.optimizer.scheduler_step_before_optimizer_step import (
    RULE as SCHEDULER_STEP_BEFORE_OPTIMIZER_STEP,
)
from torchdoctor.rules.optimizer.step_missing import RULE as STEP_MISSING
from torchdoctor.rules.optimizer.step_on_scaled_gradients import RULE as STEP_ON_SCALED_GRADIENTS
from torchdoctor.rules.optimizer.trainable_tensor_recreated_in_loop import RULE as TRAINABLE_TENSOR_RECREATED_IN_LOOP
from torchdoctor.rules.optimizer.zero_grad_before_step import RULE as ZERO_GRAD_BEFORE_STEP


@lint_check(MISSING_ZERO_GRAD, FILE_END, tracks=TRACKED, needs_torch=False)
def missing_zero_grad(tree: ast.Module, ctx: Context) -> None:
    for scope in ctx.scopes:
        flagged: set[int] = set()
        for step in scope.events:
            if not step.loops or stepped_optimizer(step) is None or has_closure(step):
                continue
            for loop in reversed(step.loops):
                events = [e for e, _ in reached(loop_events(scope, loop), ctx)]
                if not any(is_backward(e) for e in events):
                    continue
                if any(e.name == "optimizer_created" and e.receiver == step.receiver
                       and _over_fresh_tensors(e.node.value, loop) for e in events):  # type: ignore[union-attr]
                    break  # a new optimizer over tensors made in this iteration: nothing accumulates
                resets = [e for e in events if is_grad_reset(e)]
                if id(loop) not in flagged and not resets:
                    models = {e.receiver for e in events if e.name == "call" and e.scope is scope}
                    if not passed_to_a_call(loop, {step.receiver or "", *models}, ctx):  # type: ignore[arg-type]
                        flagged.add(id(loop))
                        ctx.report(MISSING_ZERO_GRAD, _accumulating_backward(step, scope, loop))
                elif resets and _other_optimizers_only(step, resets, loop, tree, ctx):
                    optimizer = stepped_optimizer(step)
                    others = ", ".join(sorted({f"`{r.receiver}`" for r in resets}))
                    ctx.report(MISSING_ZERO_GRAD, _accumulating_backward(step, scope, loop), variant="others-reset",
                               fields={"optimizer": optimizer, "others": others})
                break
    reported: set[int] = set()
    for scope in ctx.scopes:
        for info in scope.loops.values():
            _step_in_called_function(info.node, scope, reported, ctx)


def _accumulating_backward(step: Event, scope: Scope, loop: ast.AST) -> ast.stmt | ast.expr:
    """The `backward()` whose gradients land on the previous ones: the last one of this
    function's loop that runs before the step (where the reset belongs); the step itself when
    the backward is in another function."""
    before = [e for e in scope.events if inside(e, loop) and is_backward(e) and order(e, step) == -1]
    return before[-1].node if before else step.node


def _step_in_called_function(loop: ast.AST, scope: Scope, reported: set[int], ctx: Context) -> None:
    """`for batch in loader: train_step(batch)` where `train_step()` runs backward() and
    `optimizer.step()` (outside any loop of its own) and nothing resets the gradients."""
    pairs = list(reached(loop_events(scope, loop), ctx))
    steps = [(e, via) for e, via in pairs if via is not e and not e.loops and id(e.node) not in reported
             and stepped_optimizer(e) is not None and not has_closure(e)]
    if not steps:
        return
    events = [e for e, _ in pairs]
    if any(is_grad_reset(e) for e in events) or not any(is_backward(e) for e in events):
        return
    for step, via in steps:
        if any(e.name == "optimizer_created" and e.receiver == step.receiver
               and _over_fresh_tensors(e.node.value, loop) for e in events):  # type: ignore[union-attr]
            continue
        if _made_in(step, step.scope):
            continue  # a new optimizer over new tensors every call, as in a loop that builds one per iteration
        if passed_to_a_call(loop, {step.receiver or "", *(dotted(a) or "" for a in via.node.args)}, ctx):  # type: ignore[union-attr]
            continue
        reported.add(id(step.node))
        callee = via.receiver or "a function"
        ctx.report(MISSING_ZERO_GRAD, step.node, variant="in-called-function",
                   fields={"callee": callee, "call_line": via.line})


def _made_in(step: Event, scope: Scope | None) -> bool:
    """The stepped optimizer is built in `scope` (a function), so anew on every call, over
    tensors the function makes too."""
    made = _constructor(step)
    function = scope.node if scope is not None else None
    if made is None or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    inside_function = function.lineno <= made.lineno <= (function.end_lineno or function.lineno)
    return inside_function and _over_fresh_tensors(made, function)


def _over_fresh_tensors(made: ast.expr, region: ast.AST) -> bool:
    """An optimizer built in `region` (a loop body, a function) over tensors that `region` also
    makes: each one starts without gradients. A new optimizer over a model's parameters (or
    over tensors made before) does not reset their `.grad`: backward() keeps adding to it
    (checked on torch 2.13). Unknown parameters count as fresh: silence, not a guess."""
    if not isinstance(made, ast.Call) or not made.args:
        return True
    given = made.args[0]
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in (
            "parameters", "named_parameters") for n in ast.walk(given)):
        return False
    if not isinstance(given, (ast.List, ast.Tuple)) or not all(dotted(e) for e in given.elts):
        return True
    assigned = assigned_names(region)
    return all(dotted(e) in assigned for e in given.elts)


def _other_optimizers_only(step: Event, resets: list[Event], loop: ast.AST, tree: ast.Module, ctx: Context) -> bool:
    """Every reset in the loop is `zero_grad()` of *another* optimizer, or of the model another
    optimizer is built over (a GAN that resets the generator and steps the discriminator too):
    nothing resets this one's gradients. A reset of a model this optimizer may hold, of
    `p.grad`, or of an optimizer over the same parameters may cover it: then this is not said."""
    optimizer = stepped_optimizer(step)
    if optimizer is None:
        return False
    made = _made_from(step)
    for reset in resets:
        if reset.name != "zero_grad" or reset.receiver is None or reset.receiver == optimizer:
            return False
        if not (reset.kind is not None and reset.kind.tag == "optimizer"
                or reset.kind is None and looks_like_optimizer(reset.receiver)):
            if not _another_optimizers_model(reset.receiver, made, tree, ctx):
                return False  # `model.zero_grad()`: it may hold this optimizer's parameters
            continue
        other = _made_from(reset)
        if made is None or other is None or ast.dump(made) == ast.dump(other):
            return False  # built from the same parameters, or we cannot tell
    return not passed_to_a_call(loop, {optimizer}, ctx)


def _another_optimizers_model(model: str, made: ast.expr | None, tree: ast.Module, ctx: Context) -> bool:
    """`netG` when another optimizer of the file is built over `netG.parameters()` and this one
    over the parameters of a model that is neither `netG` nor part of it."""
    mine = parameters_owner(made)
    if mine is None or model not in optimized_models(tree, ctx):
        return False
    return not (model == mine or model.startswith(mine + ".") or mine.startswith(model + "."))


def _constructor(event: Event) -> ast.Call | None:
    """The call that built the optimizer the event's receiver holds (`torch.optim.SGD(...)`)."""
    kind = event.kind
    made = kind.node if kind is not None and kind.tag == "optimizer" else None
    return made if isinstance(made, ast.Call) else None


def _made_from(event: Event) -> ast.expr | None:
    """The first argument of the optimizer's constructor (`model.parameters()`), when known."""
    made = _constructor(event)
    return made.args[0] if made is not None and made.args else None


@lint_check((MISSING_ZERO_GRAD, ZERO_GRAD_BEFORE_STEP), ast.Assign, needs_torch=False)
def gradient_assigned(node: ast.Assign, ctx: Context) -> None:
    """`p.grad = None` (or any assignment to `.grad`) resets a gradient like zero_grad()."""
    for target in node.targets:
        if isinstance(target, ast.Attribute) and target.attr == "grad":
            ctx.record("grad_reset", node, dotted(target.value))


@lint_check((MISSING_ZERO_GRAD, ZERO_GRAD_BEFORE_STEP), ast.Delete, needs_torch=False)
def gradient_deleted(node: ast.Delete, ctx: Context) -> None:
    for target in node.targets:
        if isinstance(target, ast.Attribute) and target.attr == "grad":
            ctx.record("grad_reset", node, dotted(target.value))


@lint_check((ZERO_GRAD_BEFORE_STEP, BACKWARD_MISSING), FILE_END, tracks=TRACKED, needs_torch=False)
def zero_grad_before_step(tree: ast.Module, ctx: Context) -> None:
    """A step whose last gradient event is a reset. With a backward() before the reset, the reset
    is out of place (TD112); with one after the step, the step is; with none in the pass at all,
    the backward() is missing (TD170, for a step outside any loop or among other optimizers')."""
    if not resets_gradients(ctx):
        return  # every case starts at a reset
    for scope in ctx.scopes:
        events = scope.events
        everything = list(reached(events, ctx))
        # gradients computed, or set by hand (`p.grad = ...`), with where they happen in this function
        sources = [(e, via) for e, via in everything if is_gradient_computation(e, ctx) or e.name == "grad_reset"]
        gradients = [via for _, via in sources]
        for reset, at in ((e, via) for e, via in everything if e.name == "zero_grad"):
            for step in events:
                optimizer = stepped_optimizer(step)
                if optimizer is None or order(at, step) != -1 or not _resets(reset, step, optimizer):
                    continue
                if not _encloses(at, step):
                    continue  # the reset sits in a branch of its own (`if nan: zero_grad(); continue`)
                if any((order(at, g) == -1 or g is at and order(reset, e) == -1) and order(g, step) == -1
                       for e, g in sources):
                    continue  # gradients are computed again before the step (also in the helper that resets)
                backward = any(order(g, at) == -1 and _same_pass(g, at) for g in gradients)
                after = any(order(step, g) == -1 and _same_pass(g, step) for g in gradients)
                if backward:
                    ctx.report(ZERO_GRAD_BEFORE_STEP, at.node)
                elif after and (step.loops or id(scope) in called_in_loops(ctx)):  # at the step: it is the call out of place
                    ctx.report(ZERO_GRAD_BEFORE_STEP, step.node, variant="step-before-backward",
                               fields={"optimizer": optimizer, "reset_line": at.line})
                elif not after and not gradients:
                    _backward_dropped(scope, at, step, optimizer, ctx)
                break


def _backward_dropped(scope: Scope, reset: Event, step: Event, optimizer: str, ctx: Context) -> None:
    """No backward() anywhere in the function (or what it calls) that resets and steps: after a
    loss is computed, the step applies the zeros the reset left. Not said when the loss or the
    optimizer goes to a function of another file, or gradients are set by hand (`p.grad = ...`)."""
    done: set[int] = ctx.memo.setdefault("TD170-steps", set())
    if id(step.node) in done or has_closure(step) or any(e.name in ("grad_reset", "scale") for e in scope.events):
        return
    losses = [e.receiver for e in scope.events if e.name == "loss_computed" and e.receiver and order(e, step) == -1]
    region = step.loops[-1] if step.loops else scope.node
    if not losses or passed_to_a_call(region, {optimizer, *losses}, ctx) or _opaque_call_between(region, reset, step, ctx):
        return
    done.add(id(step.node))
    loss = losses[-1]
    ctx.report(BACKWARD_MISSING, step.node, variant="reset-then-step",
               fields={"loss": loss, "optimizer": optimizer, "reset_line": reset.line})


@lint_check(ACCUMULATION_RESET_EVERY_MICRO_BATCH, FILE_END, tracks=TRACKED, needs_torch=False)
def accumulation_reset_every_micro_batch(tree: ast.Module, ctx: Context) -> None:
    """A step under `if <counter> % k ...:` and an unconditional zero_grad() before an
    unconditional backward() in the same loop: the reset undoes the accumulation."""
    for scope in ctx.scopes:
        events = scope.events
        for step in events:
            optimizer = stepped_optimizer(step)
            if optimizer is None or not step.loops or has_closure(step):
                continue
            loop = step.loops[-1]
            gate = next((c for c in reversed(step.conditions) if _within(c, loop) and _periodic(c.test)), None)
            if gate is None:
                continue
            in_loop = [e for e in events if e.loops and e.loops[-1] is loop]
            if any(is_backward(e) and gate in e.conditions for e in in_loop):
                continue  # the gated step computes its own gradients: nothing is accumulated
            if any(stepped_optimizer(e) not in (None, optimizer) and not any(_within(c, loop) for c in e.conditions)
                   for e in in_loop):
                continue  # another optimizer steps every iteration: the backward may be its own (a GAN)
            for reset in events:
                if (reset.name != "zero_grad" or not reset.loops or reset.loops[-1] is not loop
                        or any(_within(c, loop) for c in reset.conditions) or not _resets(reset, step, optimizer)):
                    continue
                if order(reset, step) is None:
                    continue  # the other branch of an `if accumulation_steps > 1:` (no accumulation there)
                if any(is_backward(e) and gate not in e.conditions and order(reset, e) == -1 and _encloses(reset, e)
                       for e in in_loop):
                    ctx.report(ACCUMULATION_RESET_EVERY_MICRO_BATCH, reset.node,
                               fields={"every": f"when `{ast.unparse(gate.test)}`"})
                    break


def _within(node: ast.AST, loop: ast.AST) -> bool:
    """`node` sits in the body of `loop` (not around it)."""
    return loop.lineno < node.lineno <= (loop.end_lineno or loop.lineno)  # type: ignore[attr-defined]


def _periodic(test: ast.expr) -> bool:
    """A condition on a remainder (`(i + 1) % accum_steps == 0`): true once every k iterations."""
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(test))


def _resets(reset: Event, step: Event, optimizer: str) -> bool:
    """Does this zero_grad() clear the gradients this step applies?"""
    if reset.receiver == optimizer:
        return True
    owner = parameters_owner(_made_from(step))
    return owner is not None and owner == reset.receiver


def _encloses(a: Event, b: Event) -> bool:
    """Whenever `b` runs, `a` ran in the same pass: a's statement list is b's or encloses it."""
    return b.path[: len(a.path) - 1] == a.path[:-1] and len(b.path) >= len(a.path)


def _same_pass(a: Event, b: Event) -> bool:
    """`a` and `b` run in the same iteration: the same loops, or `a` in a loop nested in b's."""
    return a.loops[: len(b.loops)] == b.loops


@lint_check(CLIP_GRAD_BEFORE_BACKWARD, FILE_END, tracks=TRACKED, needs_torch=False)
def clip_grad_before_backward(tree: ast.Module, ctx: Context) -> None:
    for scope in ctx.scopes:
        events = scope.events
        for clip in events:
            if not is_clip(clip):
                continue
            if any(is_backward(e) and order(e, clip) == -1 and _same_pass(e, clip) for e in events):
                step = _step_before(clip, events)
                if step is not None:
                    ctx.report(CLIP_GRAD_BEFORE_BACKWARD, clip.node, variant="after-step",
                               fields={"step": f"`{ctx.text(step.node)}` (line {step.node.lineno})"})
                continue
            backward = next((e for e in events if is_backward(e) and order(clip, e) == -1 and _same_pass(e, clip)), None)
            if backward is None:
                continue
            if any(stepped_optimizer(s) and order(backward, s) == -1 and s.loops == clip.loops for s in events):
                ctx.report(CLIP_GRAD_BEFORE_BACKWARD, clip.node)


def _step_before(clip: Event, events: list[Event]) -> Event | None:
    """The optimizer step that runs before a clip in the same loop body, whenever the clip runs
    (not a step under `if (i + 1) % k == 0:`), once every backward() of the iteration has run
    before that step (else the clip is for a later update); None when the clip only measures
    (an infinite limit) or clips parameters another optimizer is built from."""
    call, step = clip.node, None
    for event in events:
        if stepped_optimizer(event) and event.loops == clip.loops and order(event, clip) == -1 and _encloses(event, clip):
            step = event
    if step is None or not isinstance(call, ast.Call) or _measures_only(call):
        return None
    backwards = [e for e in events if is_backward(e) and _same_pass(e, clip)]
    if any(order(b, step) != -1 for b in backwards):
        return None
    clipped = parameters_owner(call.args[0]) if call.args else None
    trained = parameters_owner(_made_from(step))
    if clipped is not None and trained is not None and not (
            clipped == trained or clipped.startswith(trained + ".") or trained.startswith(clipped + ".")):
        return None
    return step


def _measures_only(clip: ast.Call) -> bool:
    """`clip_grad_norm_(params, float("inf"))` / `math.inf`: returns the norm, changes nothing."""
    limit = clip.args[1] if len(clip.args) > 1 else keyword(clip, "max_norm") or keyword(clip, "clip_value")
    if isinstance(limit, ast.Call) and terminal(limit.func) == "float" and limit.args:
        return str(literal(limit.args[0])).strip().lower().lstrip("+") in ("inf", "infinity")
    return isinstance(limit, ast.Attribute) and limit.attr == "inf"


@lint_check(CLIP_GRAD_ON_SCALED_GRADIENTS, FILE_END, tracks=TRACKED)
def clip_grad_on_scaled_gradients(tree: ast.Module, ctx: Context) -> None:
    for scope in ctx.scopes:
        events = scope.events
        for clip in events:
            if not is_clip(clip) or not (ctx.qualified(clip.node.func) or "").startswith(  # type: ignore[union-attr]
                    "torch.nn.utils."):
                continue
            backward = _last_before(events, clip, is_scaled_backward)
            if backward is None:
                continue
            if any(e.name == "unscale_" and order(backward, e) == -1 and order(e, clip) == -1 for e in events):
                continue
            if any(is_scaler_step(s) and order(clip, s) == -1 for s in events):
                ctx.report(CLIP_GRAD_ON_SCALED_GRADIENTS, clip.node)


def _last_before(events: list[Event], event: Event, test: object) -> Event | None:
    found = None
    for candidate in events:
        if test(candidate) and order(candidate, event) == -1 and _same_pass(candidate, event):  # type: ignore[operator]
            found = candidate
    return found


@lint_check(RETAIN_GRAPH_IN_LOOP, FILE_END, tracks=TRACKED, needs_torch=False)
def retain_graph_in_loop(tree: ast.Module, ctx: Context) -> None:
    for scope in ctx.scopes:
        for backward in scope.events:
            if not is_backward(backward) or not backward.loops:
                continue
            if literal(keyword(backward.node, "retain_graph")) is not True:  # type: ignore[arg-type]
                continue
            loop = backward.loops[-1]
            later = [
                e for e, via in reached(loop_events(scope, loop), ctx)
                if e is not backward and is_gradient_computation(e, ctx) and order(backward, via) in (-1, 0)
            ]
            if not later and _trains(scope, backward.loops[0], ctx):
                ctx.report(RETAIN_GRAPH_IN_LOOP, backward.node)


def _trains(scope: Scope, loop: ast.AST, ctx: Context) -> bool:
    """The loop (the outermost one around a backward) updates weights: an optimizer's step, or
    the parameters moved by hand by their gradients. A loop that only computes gradients (a
    test helper that backpropagates a sum of terms again and again to read `.grad`, a
    per-sample gradient) changes nothing between its backward passes, so going through the same
    graph again is what it means to do, not a graph kept alive by mistake."""
    if any(stepped_optimizer(e) is not None for e, _ in reached(loop_events(scope, loop), ctx)):
        return True
    return manual_update(loop) is not None


@lint_check(STEP_ON_SCALED_GRADIENTS, FILE_END, tracks=TRACKED)
def step_on_scaled_gradients(tree: ast.Module, ctx: Context) -> None:
    for scope in ctx.scopes:
        events = scope.events
        for backward in events:
            if not is_scaled_backward(backward):
                continue
            if any(is_scaler(e) and e.name == "step" or e.name == "unscale_" for e in _around(events, backward)):
                continue
            for step in events:
                if stepped_optimizer(step) and not is_scaler_step(step) and order(backward, step) == -1:
                    ctx.report(STEP_ON_SCALED_GRADIENTS, step.node, fields={"scaler": _scaler_name(backward)})
                    break


def _around(events: list[Event], event: Event) -> list[Event]:
    """Events of the same function in the same loop as `event` (all of them outside loops)."""
    if not event.loops:
        return events
    return [e for e in events if inside(e, event.loops[-1])]


def _scaler_name(backward: Event) -> str:
    scale = scale_call(backward)
    return (dotted(scale.func.value) if scale is not None else None) or "scaler"  # type: ignore[attr-defined]


@lint_check(SCHEDULER_STEP_BEFORE_OPTIMIZER_STEP, FILE_END, tracks=TRACKED, needs_torch=False)
def scheduler_before_optimizer(tree: ast.Module, ctx: Context) -> None:
    for scope in ctx.scopes:
        events = scope.events
        for sched in events:
            if sched.name != "step" or not _is_scheduler(sched):
                continue
            steps = [s for s in events if stepped_optimizer(s) and s.loops[: len(sched.loops)] == sched.loops]
            if not steps or any(order(s, sched) == -1 for s in steps):
                continue
            if sched.kind is None and not all(len(s.loops) > len(sched.loops) for s in steps):
                # a scheduler of unknown type stepped right before the optimizer in the same
                # iteration: custom warm-up schedulers are written to set this step's rate first
                continue
            if any(order(sched, s) == -1 for s in steps):
                ctx.report(SCHEDULER_STEP_BEFORE_OPTIMIZER_STEP, sched.node,
                           fields={"scheduler": sched.receiver or "scheduler"})


def _is_scheduler(event: Event) -> bool:
    if event.kind is not None:
        return event.kind.tag == "scheduler"
    name = (event.receiver or "").rpartition(".")[2].lower()
    return "sched" in name and "step" not in name


@lint_check((MISSING_ZERO_GRAD, OPTIMIZER_CREATED_IN_LOOP, TRAINABLE_TENSOR_RECREATED_IN_LOOP), ast.Assign)
def optimizer_created_in_loop(node: ast.Assign, ctx: Context) -> None:
    if not ctx.loops or not isinstance(node.value, ast.Call) or len(node.targets) != 1:
        return
    kind = ctx.kind(node.value)
    target = dotted(node.targets[0])
    if kind is not None and kind.tag == "optimizer" and target is not None:
        ctx.record("optimizer_created", node, target)


@lint_check(OPTIMIZER_CREATED_IN_LOOP, FILE_END, tracks=TRACKED)
def optimizer_stepped_in_creation_loop(tree: ast.Module, ctx: Context) -> None:
    for scope in ctx.scopes:
        for made in scope.events:
            if made.name != "optimizer_created" or not _over_model_parameters(made.node.value):  # type: ignore[union-attr]
                continue
            if any(stepped_optimizer(s) == made.receiver and s.loops == made.loops and order(made, s) == -1
                   for s in scope.events):
                ctx.report(OPTIMIZER_CREATED_IN_LOOP, made.node, fields={"optimizer": made.receiver})


def _over_model_parameters(call: ast.Call) -> bool:
    """`SGD(model.parameters(), ...)`: a long-lived model, not tensors made in this iteration."""
    if not call.args:
        return False
    first = call.args[0]
    return isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute) and first.func.attr in (
        "parameters", "named_parameters")


@lint_check((BACKWARD_MISSING,), ast.Assign, needs_torch=False)
def loss_computed(node: ast.Assign, ctx: Context) -> None:
    """Remember `loss = criterion(...)` inside loops (or in a function, which a loop may call):
    the loop trains something. Also
    `logits, loss = model(x, y)`, a model that returns its loss beside its output."""
    if (ctx.loops or ctx.scope is not ctx.module_scope) and len(node.targets) == 1:
        if isinstance(node.value, ast.Call) and "backward" in (terminal(node.value.func) or "").lower():
            return  # `loss = trainer.forward_backward_step(batch)`: the call runs the backward itself
        target = node.targets[0]
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Call):
            names = [dotted(e) for e in target.elts]
            losses = [n for n in names if n is not None and _named_loss(n)]
            if len(losses) == 1:
                ctx.record("loss_computed", node, losses[0])
            return
        name = dotted(target)
        kind = ctx.kind(node.value)
        named = kind is None and name is not None and _named_loss(name)
        if named and isinstance(node.value, (ast.Call, ast.BinOp)) or kind is not None and kind.tag == "loss":
            ctx.record("loss_computed", node, name)


#: calls between a reset and a step that compute no gradient
_PLAIN_CALLS = frozenset({"zip", "len", "range", "enumerate", "print", "float", "int", "list", "tuple", "sum", "min",
                          "max", "abs", "isinstance", "sorted", "reversed", "str", "dict", "round"})
_PLAIN_METHODS = frozenset({"append", "extend", "insert", "appendleft", "pop", "item", "sum", "mean", "std", "detach",
                            "view", "reshape", "to", "float", "clone", "cpu", "numpy", "tolist", "format", "log", "info"})


def _opaque_call_between(region: ast.AST, reset: Event, step: Event, ctx: Context) -> bool:
    """A call between the reset and the step that may run a backward() out of sight: a function
    of another file, or a method (`loss.accumulate_gradients(...)`) that is not plain data work."""
    for node in ast.walk(region):
        if not isinstance(node, ast.Call) or not reset.line < node.lineno < step.line:
            continue
        func = node.func
        qualified = ctx.qualified(func) or ""
        if qualified.startswith("torch.") and not qualified.startswith(("torch.autograd", "torch.distributed")):
            continue
        if isinstance(func, ast.Name) and (func.id in _PLAIN_CALLS or func.id in ctx.functions):
            continue
        if isinstance(func, ast.Attribute) and not qualified and (func.attr in _PLAIN_METHODS or not node.args and not node.keywords):
            continue
        return True
    return False


def _named_loss(name: str) -> bool:
    return "loss" in name.rpartition(".")[2].lower()


@lint_check(BACKWARD_MISSING, FILE_END, tracks=TRACKED, needs_torch=False)
def backward_missing(tree: ast.Module, ctx: Context) -> None:
    for scope in ctx.scopes:
        for info in scope.loops.values():
            loop = info.node
            everything = list(reached(loop_events(scope, loop), ctx))
            events = [e for e, _ in everything]
            pairs = _step_of(everything, loop)
            steps = [e for e, _ in pairs if stepped_optimizer(e) and not has_closure(e)]
            losses = [e for e, _ in pairs if e.name == "loss_computed"]
            if not steps or not losses or not any(e.name == "zero_grad" for e in events):
                continue
            if any(is_gradient_computation(e, ctx) or e.name in ("grad_reset", "scale") for e in events):
                continue
            names = {e.receiver for e in losses if e.receiver} | {stepped_optimizer(s) or "" for s in steps}
            if _passed_on(loop, pairs, names, ctx):
                continue
            done: set[int] = ctx.memo.setdefault("TD170-steps", set())
            if id(steps[0].node) in done:
                continue
            done.add(id(steps[0].node))
            loss = losses[0].receiver or "loss"
            via = _calling(steps[0], pairs)
            if via is None:
                ctx.report(BACKWARD_MISSING, steps[0].node, fields={"loss": loss})
            else:
                ctx.report(BACKWARD_MISSING, steps[0].node, variant="in-called-function",
                           fields={"loss": loss, "callee": via.receiver, "call_line": via.line})


@lint_check(STEP_MISSING, ast.Assign, needs_torch=False)
@lint_check(STEP_MISSING, ast.AnnAssign, needs_torch=False)
@lint_check(STEP_MISSING, ast.AugAssign, needs_torch=False)
@lint_check(STEP_MISSING, ast.ClassDef, needs_torch=False)
def binding_seen(node: ast.Assign | ast.AnnAssign | ast.AugAssign | ast.ClassDef, ctx: Context) -> None:
    """The assignments and classes of the file, for `never_stepped` at the end."""
    remember(node, ctx)


@lint_check(STEP_MISSING, FILE_END, tracks=TRACKED, needs_torch=False)
def step_missing(tree: ast.Module, ctx: Context) -> None:
    reported: set[str | None] = set()
    for scope in ctx.scopes:
        for info in scope.loops.values():
            loop = info.node
            everything = list(reached(loop_events(scope, loop), ctx))
            events = [e for e, _ in everything]
            # the loop's own resets only: a function called per iteration that resets and runs
            # backward() without a step is also how forward/backward timings are written
            pairs = [(e, via) for e, via in _step_of(everything, loop) if via is e]
            resets = [e for e, _ in pairs if e.name == "zero_grad"
                      and (e.kind is not None and e.kind.tag == "optimizer" or
                           e.kind is None and looks_like_optimizer(e.receiver))]
            if not resets or not any(is_backward(e) for e in events):
                continue
            if any(e.name == "step" for e in events) or passed_to_a_call(loop, {r.receiver or "" for r in resets}, ctx):
                continue
            if _steps_by_another_name(loop, {r.receiver for r in resets}):
                continue
            reported.add(resets[0].receiver)
            ctx.report(STEP_MISSING, _last_gradient_call(pairs, resets[0]) or resets[0].node,
                       fields={"optimizer": resets[0].receiver})
    for optimizer, model, where in never_stepped(tree, ctx):
        if optimizer not in reported:
            ctx.report(STEP_MISSING, where, variant="never-stepped", fields={"optimizer": optimizer, "model": model})


def _step_of(everything: list[tuple[Event, Event]], loop: ast.AST) -> list[tuple[Event, Event]]:
    """Of what a loop reaches (`steps.reached`), one iteration's training step: the events of
    this loop's own body (not of a loop nested in it), and those of the same-file functions it
    calls there outside any loop of theirs (`for batch in loader: self._run_batch(batch)`), with
    the call that led to each."""
    return [(event, via) for event, via in everything
            if via.loops[-1:] == (loop,) and (via is event or not event.loops)]


def _calling(event: Event, pairs: list[tuple[Event, Event]]) -> Event | None:
    """The call in the loop that runs `event` in a function it calls, for the message to name
    that loop (None: `event` is in the loop itself)."""
    via = next((v for e, v in pairs if e is event), event)
    return None if via is event else via


def _passed_on(loop: ast.AST, pairs: list[tuple[Event, Event]], names: set[str], ctx: Context) -> bool:
    """One of `names` goes to a function of another file, in the loop or in a function of
    this file it calls, which may do the backward or the step itself."""
    regions: list[ast.AST] = [loop]
    regions += [e.scope.node for e, via in pairs if via is not e and e.scope is not None]
    return any(passed_to_a_call(region, names, ctx) for region in {id(r): r for r in regions}.values())


def _last_gradient_call(pairs: list[tuple[Event, Event]], reset: Event) -> ast.stmt | ast.expr | None:
    """The last `backward()` or gradient clipping of the step, in the function of its reset:
    the step belongs right after it."""
    calls = [e for e, _ in pairs if e.scope is reset.scope and (is_backward(e) or is_clip(e))]
    return max(calls, key=lambda e: e.line).node if calls else None


def _steps_by_another_name(loop: ast.AST, optimizers: set[str | None]) -> bool:
    """`optimizer.step_and_update_lr()`: a wrapper's own method that steps (its name says so)."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and "step" in n.func.attr
               and dotted(n.func.value) in optimizers for n in ast.walk(loop))
