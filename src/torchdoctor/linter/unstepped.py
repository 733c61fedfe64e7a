"""TD172 for an optimizer that nothing in the file steps: built over a model's parameters,
its gradients reset and computed, and never applied. A GAN whose discriminator's step went
missing still steps the generator's optimizer in the same loop, so the loop-level check (some
loop resets and runs backward() but steps nothing) cannot see it; this one looks at each
optimizer on its own.

The optimizer must be bound once, to a plain name (or to an attribute of a class with no base,
`self.optimizer = optimizer`), and used only in ways that cannot step it: `zero_grad()`, its
`param_groups` and state, a learning-rate scheduler built over it. Handed to any other call,
returned or stored elsewhere, it may be stepped there, and is left alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchdoctor.linter.api import Context, Event, looks_like_optimizer
from torchdoctor.linter.index import TreeIndex, tree_index
from torchdoctor.linter.steps import is_backward, parameters_owner, reached, resets_gradients, stepped_optimizer

#: ctx.memo key: the file's assignments and classes, as the walk met them (`remember`)
_SEEN = "TD172-seen"
#: what may be done with an optimizer without stepping it
_HARMLESS = frozenset({"zero_grad", "param_groups", "state_dict", "load_state_dict", "add_param_group", "defaults",
                       "state"})


def never_stepped(tree: ast.Module, ctx: Context) -> Iterator[tuple[str, str, ast.AST]]:
    """(optimizer name, model name, where its step belongs) for each optimizer of the file that is
    never stepped while some backward() runs: after the last backward() between the reset of its
    gradients and the next reset or step of another optimizer. A file that resets no gradients
    with `zero_grad()` has no such place, and its tree is not walked."""
    if not resets_gradients(ctx):
        return
    seen = _assignments_and_classes(tree, ctx)
    bound: dict[str, list[ast.Assign]] = {}
    for node in seen:
        if isinstance(node, ast.ClassDef):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
        for name in (name for target in targets for name in _names_in(target)):
            bound.setdefault(name, []).append(node)  # type: ignore[arg-type]
    for name, assignments in bound.items():
        if len(assignments) != 1 or not isinstance(assignments[0], ast.Assign):
            continue
        value = assignments[0].value
        if not _optimizer_constructor(value, ctx) or _called_by_name(name, ctx) \
                or not _only_harmless_uses(name, assignments[0], tree_index(tree, ctx), ctx):
            continue
        model = _model_of(value)  # type: ignore[arg-type]
        where = _step_site(name, model, ctx)
        if where is not None:
            yield name, f"`{model}`" if model else "the model", where.node
    for cls in (n for n in seen if isinstance(n, ast.ClassDef) and not n.bases):
        for attribute in _optimizer_attributes(cls, ctx):
            if _only_harmless_attribute_uses(attribute, tree_index(tree, ctx), ctx):
                where = _step_site(f"self.{attribute}", None, ctx)
                if where is not None:
                    yield f"self.{attribute}", "the model", where.node


def remember(node: ast.Assign | ast.AnnAssign | ast.AugAssign | ast.ClassDef, ctx: Context) -> None:
    """An assignment or a class, as the walk meets it (training_step.py registers this for
    each), so that `never_stepped` finds them without walking the tree."""
    ctx.memo.setdefault(_SEEN, []).append(node)


def _assignments_and_classes(tree: ast.Module, ctx: Context) -> list[ast.stmt]:
    """Every assignment and class of the file: those the walk met, or, when it stopped short,
    those of the tree's index."""
    if ctx.walked_whole_file:
        return ctx.memo.get(_SEEN, [])
    index = tree_index(tree, ctx)
    return [*index.of_any(ast.Assign, ast.AnnAssign, ast.AugAssign), *index.of(ast.ClassDef)]  # type: ignore[list-item]


def _called_by_name(name: str, ctx: Context) -> bool:
    """A recorded call of a method of `name` that is not harmless (`optimizer.step()`): a use
    `_only_harmless_uses` would refuse, found without indexing every name of the file."""
    for scope in ctx.scopes:
        for event in scope.events:
            call = event.node
            if call.__class__ is ast.Call:
                func = call.func
                if func.__class__ is ast.Attribute and func.attr not in _HARMLESS \
                        and func.value.__class__ is ast.Name and func.value.id == name:
                    return True
    return False


def _names_in(target: ast.expr) -> list[str]:
    """The names an assignment target holds, in `ast.walk` order (a plain name is not walked:
    most targets are one, and this runs for every assignment of the file)."""
    if target.__class__ is ast.Name:
        return [target.id]
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def _optimizer_attributes(cls: ast.ClassDef, ctx: Context) -> list[str]:
    """`self.optimizer = optimizer`: attributes of a class with no base (nothing outside the file
    adds methods to it) bound once, to an optimizer by their name or their value."""
    bound: dict[str, int] = {}
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign):
            for target in (t for top in node.targets for t in ast.walk(top)):
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                    bound[target.attr] = bound.get(target.attr, 0) + 1
    return [name for name, times in bound.items() if times == 1 and looks_like_optimizer(f"self.{name}")]


def _only_harmless_attribute_uses(attribute: str, index: TreeIndex, ctx: Context) -> bool:
    """Every read of `.{attribute}` in the file only resets it or reads its state."""
    return all(_harmless(node, index.parents, ctx) for node in index.of(ast.Attribute)
               if node.attr == attribute and not isinstance(node.ctx, ast.Store))


def _optimizer_constructor(value: ast.expr, ctx: Context) -> bool:
    if not isinstance(value, ast.Call):
        return False
    qualified = ctx.qualified(value.func) or ""
    head, _, last = qualified.rpartition(".")
    return head == "torch.optim" and last[:1].isupper()


def _only_harmless_uses(name: str, assignment: ast.Assign, index: TreeIndex, ctx: Context) -> bool:
    return all(_harmless(node, index.parents, ctx) for node in index.of(ast.Name)
               if node.id == name and all(node is not t for t in assignment.targets))


def _harmless(node: ast.expr, parents: dict[int, ast.AST], ctx: Context) -> bool:
    """A use of an optimizer that cannot step it: a reset or a read of its state
    (`opt.zero_grad()`, `opt.param_groups`), a scheduler built over it, a `global` line."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.Attribute) and parent.attr in _HARMLESS or isinstance(parent, ast.Global):
        return True
    return isinstance(parent, ast.Call) and node in parent.args[:1] \
        and (ctx.qualified(parent.func) or "").startswith("torch.optim.lr_scheduler.")


def _model_of(constructor: ast.Call) -> str | None:
    """`netD` in `optim.Adam(netD.parameters(), ...)` (also inside `list(...)`)."""
    first = constructor.args[0] if constructor.args else None
    while isinstance(first, ast.Call) and isinstance(first.func, ast.Name) and first.args:
        first = first.args[0]
    return parameters_owner(first)


def _step_site(name: str, model: str | None, ctx: Context) -> Event | None:
    """The last backward() after `name`'s (or its model's) gradients are reset, before another
    optimizer takes over; None when no reset of them is followed by a backward()."""
    mine = {name, model}
    for scope in ctx.scopes:
        sequence = sorted(reached(scope.events, ctx), key=lambda pair: (pair[1].line, pair[0].line))
        site: Event | None = None
        resetting = False
        for event, via in sequence:
            receiver = event.receiver
            if event.name == "zero_grad":
                if receiver in mine:
                    resetting = True
                elif site is not None:
                    return site
            elif stepped_optimizer(event) is not None and receiver not in mine and site is not None:
                return site
            elif resetting and is_backward(event) and via is event:
                site = event
        if site is not None:
            return site
    return None
