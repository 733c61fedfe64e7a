"""The training step as the source shows it: which recorded calls are a backward, an optimizer
step, a gradient reset, a clip; in which order they run; what a loop does, through the
functions of the same file that it calls.

Shared by the optimizer, mode and memory checks (and open to new ones): FILE_END checks read
`Scope.events` through these helpers instead of walking the tree again.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchdoctor.linter.context import Context
from torchdoctor.linter.flow import looks_like_optimizer
from torchdoctor.linter.index import tree_index
from torchdoctor.linter.model import Event, Scope
from torchdoctor.linter.names import dotted, keyword

#: method names the training-step checks need recorded as events
TRACKED = frozenset({
    "backward", "manual_backward", "step", "zero_grad", "zero_", "clip_grad_norm_", "clip_grad_value_",
    "clip_grad_norm", "unscale_", "eval", "train", "update", "set_epoch", "grad", "scale",
})
CLIPS = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"})
_NOT_OPTIMIZERS = ("sched", "scaler", "env", "lr_", "warmup", "ema", "swa", "progress", "bar", "pbar", "timer")


def is_backward(event: Event) -> bool:
    """`loss.backward()`, `scaler.scale(loss).backward()`, `accelerator.backward(loss)`,
    `self.manual_backward(loss)`, `torch.autograd.backward(...)`."""
    return event.name in ("backward", "manual_backward")


def is_scaled_backward(event: Event) -> bool:
    """`scaler.scale(loss).backward()`, or `loss = scaler.scale(loss)` ... `loss.backward()`."""
    return scale_call(event) is not None


def scale_call(event: Event) -> ast.Call | None:
    """The `scaler.scale(loss)` call whose result a backward event runs on, inline or by name."""
    node = event.node
    if event.name != "backward" or not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    inner = node.func.value
    if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "scale":
        return inner
    kind = event.kind
    if kind is not None and kind.tag == "loss" and kind.detail == "scaled" and isinstance(kind.node, ast.Call):
        return kind.node
    return None


def is_gradient_computation(event: Event, ctx: Context) -> bool:
    """A backward, or `torch.autograd.grad(...)` (which also consumes the graph)."""
    if is_backward(event):
        return True
    return event.name == "grad" and isinstance(event.node, ast.Call) and ctx.qualified(event.node.func) == "torch.autograd.grad"


def stepped_optimizer(event: Event) -> str | None:
    """The optimizer an event steps (`optimizer` for `optimizer.step()` and for
    `scaler.step(optimizer)`), or None when the event is no optimizer step."""
    node = event.node
    if event.name != "step" or not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    receiver = event.receiver
    if is_scaler_step(event):
        return dotted(node.args[0]) if node.args else None
    kind = event.kind
    if kind is not None:
        return receiver if kind.tag == "optimizer" else None
    if receiver is None or any(part in receiver.lower() for part in _NOT_OPTIMIZERS):
        return None
    return receiver if looks_like_optimizer(receiver) else None


def parameters_owner(value: ast.AST | None) -> str | None:
    """`model` for `model.parameters()`: whose parameters an optimizer is built from."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "parameters":
        return dotted(value.func.value)
    return None


def optimized_models(tree: ast.Module, ctx: Context) -> dict[str, ast.Call]:
    """Names whose `.parameters()` a `torch.optim` optimizer of this file is built from (also
    inside a list, a sum of lists or param groups), each with the optimizer's call. Read from
    the whole file: the optimizer may be stepped in a function that receives it. Found once
    per file, whichever rule asks first."""
    models: dict[str, ast.Call] | None = ctx.memo.get("optimized_models")
    if models is not None:
        return models
    models = ctx.memo["optimized_models"] = {}
    if "optim" not in ctx.source.text:  # no `torch.optim` name can be spelled without it
        return models
    if ctx.walked_whole_file:
        found, shared = _models_built(ctx.calls, ctx)
        if not shared:
            models.update(found)
            return models
    models.update(_models_built(tree_index(tree, ctx).of(ast.Call), ctx)[0])
    return models


def _models_built(calls: list[ast.Call], ctx: Context) -> tuple[dict[str, ast.Call], bool]:
    """The models the `torch.optim` calls among `calls` are built over, each with the first of
    them; and whether a model has more than one, when which is first is `ast.walk`'s order (the
    tree's index, built only then: the walk's own calls serve every other file)."""
    models: dict[str, ast.Call] = {}
    shared = False
    for node in calls:
        if not (ctx.qualified(node.func) or "").startswith("torch.optim."):
            continue
        given = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "params")]
        for inner in (n for value in given for n in ast.walk(value)):
            name = parameters_owner(inner)
            if name is not None:
                shared = models.setdefault(name, node) is not node or shared
    return models, shared


def is_scaler_step(event: Event) -> bool:
    """`scaler.step(optimizer)` (a GradScaler by construction, or by name)."""
    return event.name == "step" and is_scaler(event)


def is_scaler(event: Event) -> bool:
    """The event's receiver is a GradScaler (by construction, or by name)."""
    if event.kind is not None:
        return event.kind.tag == "scaler"
    return event.receiver is not None and "scaler" in event.receiver.rpartition(".")[2].lower()


def has_closure(event: Event) -> bool:
    """`optimizer.step(closure)`: the closure computes the gradients (LBFGS style)."""
    node = event.node
    if not isinstance(node, ast.Call) or is_scaler(event):
        return False
    return bool(node.args) or keyword(node, "closure") is not None


def is_grad_reset(event: Event) -> bool:
    """`zero_grad()` on anything, `p.grad = None`, `p.grad.zero_()`, `p.grad.data.zero_()`."""
    if event.name in ("zero_grad", "grad_reset"):
        return True
    return event.name == "zero_" and (event.receiver or "").endswith((".grad", ".grad.data"))


def is_clip(event: Event) -> bool:
    return event.name in CLIPS


def order(a: Event, b: Event) -> int | None:
    """-1 when `a` runs before `b` in the same pass, 1 when after, None when they are in
    exclusive branches (`if`/`else`, `try`/`except`) or cannot be compared."""
    for (block_a, index_a), (block_b, index_b) in zip(a.path, b.path):
        if block_a != block_b:
            return None
        if index_a != index_b:
            return -1 if index_a < index_b else 1
    key_a = (a.node.lineno, a.node.col_offset)
    key_b = (b.node.lineno, b.node.col_offset)
    # the same statement: evaluation order is inner first, which for chained calls is source order
    return 0 if key_a == key_b else (-1 if key_a < key_b else 1)


def inside(event: Event, loop: ast.AST) -> bool:
    return any(node is loop for node in event.loops)


def callees(event: Event, ctx: Context) -> list[Scope]:
    """The functions of this file that a `call` event may run (by name; methods via `self.`)."""
    if event.name != "call" or event.receiver is None:
        return []
    receiver = event.receiver
    if receiver.startswith("self."):
        owner = event.scope.cls if event.scope is not None else None
        return ctx.scopes_named(receiver[5:], owner) if owner is not None else []
    return ctx.scopes_named(receiver)


def resets_gradients(ctx: Context) -> bool:
    """Some function of the file (or its module level) calls `zero_grad()`: the events `reached`
    follows are all the file's, so without one no reset is reached from anywhere."""
    return any(event.name == "zero_grad" for scope in ctx.scopes for event in scope.events)


def reached(events: list[Event], ctx: Context, depth: int = 3) -> Iterator[tuple[Event, Event]]:
    """Each event, and every event of the same-file functions it calls (to `depth` levels),
    as `(event, the call in `events` that led to it)`. Receivers of callee events are renamed
    to the caller's argument when they are one of the callee's parameters, so `model.eval()`
    inside `def evaluate(net): net.eval()` called as `evaluate(model)` reads `model`."""
    for event in events:
        yield event, event
        if event.name == "call" and depth > 0:
            for scope in callees(event, ctx):
                renames = _renames(event.node, scope)  # type: ignore[arg-type]
                for inner, _ in reached(scope.events, ctx, depth - 1):
                    yield _renamed(inner, renames), event


def _renames(call: ast.Call, scope: Scope) -> dict[str, str]:
    params = [p for p in scope.params if p not in ("self", "cls")]
    renames: dict[str, str] = {}
    for param, arg in zip(params, call.args):
        name = dotted(arg)
        if name is not None:
            renames[param] = name
    for kw in call.keywords:
        name = dotted(kw.value) if kw.arg else None
        if name is not None and kw.arg in scope.params:
            renames[kw.arg] = name
    return renames


def _renamed(event: Event, renames: dict[str, str]) -> Event:
    receiver = event.receiver
    if not renames or receiver is None:
        return event
    root, dot, rest = receiver.partition(".")
    if root not in renames:
        return event
    return Event(event.name, event.node, renames[root] + dot + rest, event.loops, event.path,
                 event.grad_disabled, event.conditions, event.scope, event.kind)


def called_in_loops(ctx: Context) -> set[int]:
    """The functions of this file that a loop calls (`for batch in loader: self._run_batch(batch)`):
    their code runs once per pass, as a loop body does. Computed once per file, when a check
    first asks (at FILE_END: every scope's events are known)."""
    called: set[int] | None = ctx.memo.get("called-in-loops")
    if called is None:
        called = {id(e.scope) for scope in ctx.scopes for info in scope.loops.values()
                  for e, via in reached(loop_events(scope, info.node), ctx) if via is not e and e.scope is not None}
        ctx.memo["called-in-loops"] = called
    return called


def grad_mode_block(function: ast.AST, line: int, ctx: Context, *, enabled: bool) -> ast.With | ast.AsyncWith | None:
    """The innermost `with` of `function`'s code around `line` that turns autograd on
    (`enabled=True`: `torch.enable_grad()`) or off (`torch.no_grad()`, `inference_mode()`)."""
    blocks = [node for node in ast.walk(function) if isinstance(node, (ast.With, ast.AsyncWith))
              and node.lineno <= line <= (node.end_lineno or node.lineno)
              and any(ctx.grad_mode(item.context_expr) is enabled for item in node.items)]
    return max(blocks, key=lambda node: node.lineno, default=None)


def loop_events(scope: Scope, loop: ast.AST) -> list[Event]:
    """The events of `scope` inside `loop` (nested loops included)."""
    return [e for e in scope.events if inside(e, loop)]


#: torch's functions compute, save, wrap or export what they are given: none runs a backward(),
#: a step, a reset or a `train()` of its own, except these (which run gradients or user code)
_RUNS_USER_CODE = ("torch.autograd", "torch.distributed", "torch.utils.checkpoint", "torch.func", "torch.compile",
                   "torch.jit", "torch.cuda.amp", "torch.amp", "torch.vmap", "torch.optim")


def passed_to_a_call(loop: ast.AST, names: set[str], ctx: Context) -> bool:
    """Some call in the loop to a function *not* defined in this file takes one of `names` as an
    argument: it may do the backward, the step or the reset itself (`loss_scaler(loss, optimizer)`,
    `amp.scale_loss(loss, opt)`, `utils.zero_grads(model)`). Same-file functions are not counted:
    their calls are followed (`steps.reached`)."""
    names = {n for n in names if n}
    for node in (n for statement in getattr(loop, "body", []) for n in ast.walk(statement)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("step", "zero_grad", "item", "detach", "backward", "to"):
            continue
        if isinstance(func, ast.Name) and func.id in ctx.functions:
            continue
        qualified = ctx.qualified(func) or ""
        if qualified.startswith("torch.") and not qualified.startswith(_RUNS_USER_CODE):
            continue  # `torch.cat(losses)`, `torch.save(model, f)`: no backward, step or reset there
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
                and any(s.name.endswith("." + func.attr) for s in ctx.scopes)):
            continue
        if any(dotted(a) in names for a in [*node.args, *(k.value for k in node.keywords)]):
            return True
    return False


def assigned_names(region: ast.AST) -> set[str]:
    """The dotted names `region` (a loop, a function) binds: assignment and `for` targets (the
    elements of a tuple target), and the arguments of the functions in it."""
    names: set[str] = set()
    for node in ast.walk(region):
        if isinstance(node, ast.Assign):
            targets: list[ast.expr] = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            targets = [node.target]
        elif isinstance(node, ast.arg):
            names.add(node.arg)
            continue
        else:
            continue
        for target in targets:
            items = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            names.update(d for t in items if (d := dotted(t)) is not None)
    return names
