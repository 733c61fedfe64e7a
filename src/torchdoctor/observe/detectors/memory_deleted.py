"""TD441: "I deleted it but memory did not come back".

Two ways to see it, both explained with what still references the storage:
- a name the code `del`etes (read from the source of the running user functions) was seen
  bound to a large tensor at an earlier event of the first steps (a loss call, backward(), an
  optimizer step), and after the `del` its storage is still alive at the end of the step;
- a census finds a large storage that the user's code reaches only through small views
  (`first = features[:8]` after `del features`, or after `features` went out of scope): the
  view keeps the whole storage alive.
Storages that parameters, gradients, optimizer state, the batch or a dataset hold are not
reported (those are alive for a reason), and neither are holders TD440 reports as leaks.
"""

from __future__ import annotations

import ast
import functools
import linecache
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any

from torch.multiprocessing.reductions import StorageWeakRef

from torchdoctor.core.locate import user_frame
from torchdoctor.core.wording import size_text
from torchdoctor.introspect.frames import read_locals
from torchdoctor.introspect.source import module_tree, own_nodes, scope_of
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Backward, Location, LossCall, Step
from torchdoctor.observe.memory.census import BIG, Big, Census
from torchdoctor.observe.memory.state import FULL_STEPS, MemoryState
from torchdoctor.observe.memory.storages import Storage, is_tensor, storage_of
from torchdoctor.rules.memory.deleted_but_still_alive import RULE as DELETED

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: the steps during which deleted names are followed
WATCHED_STEPS = 2 * FULL_STEPS
#: user frames looked at per event
FRAMES = 4
#: owners whose storages are alive for a reason
EXPECTED_OWNERS = frozenset({"parameters", "gradients", "optimizer", "batch", "dataset"})
_VIEWS = frozenset({"view", "view_as", "narrow", "select", "reshape", "expand", "expand_as", "t", "transpose", "permute",
                    "unsqueeze", "squeeze", "flatten", "unflatten", "chunk", "split", "unbind", "diagonal", "as_strided",
                    "detach", "T", "mT"})


@dataclass
class Bound:
    """A name the code deletes, last seen bound to a large tensor."""

    name: str
    deleted_at: Location
    storage: Storage
    ref: StorageWeakRef


@functools.lru_cache(maxsize=1024)
def deleted_names(code: CodeType) -> dict[str, int]:
    """Names the function (or module) deletes with `del name`, and the line of each `del`."""
    tree = module_tree(code.co_filename)
    scope = scope_of(tree, code) if tree is not None else None
    if scope is None:
        return {}
    found: dict[str, int] = {}
    for node in own_nodes(scope):
        if isinstance(node, ast.Delete):
            for target in node.targets:
                for name in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(name, ast.Name):
                        found.setdefault(name.id, node.lineno)
    return found


class DeletedButAlive(Detector):
    """TD441 (see the module's doc)."""

    ORDER = 400
    rules = (DELETED,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._bound: dict[tuple[int, str], Bound] = {}
        self._deleted: list[Bound] = []
        self._reported: set[str] = set()

    def install(self) -> None:
        self.ctx.instrument(MemoryState).listeners.append(self._census)

    def on_loss(self, event: LossCall) -> None:
        self._look()

    def on_backward(self, event: Backward) -> None:
        self._look()

    def on_step_end(self, event: Step) -> None:
        self._look()
        if not self._deleted:
            return
        alive = [bound for bound in self._deleted if not bound.ref.expired()]
        self._deleted = []
        if not alive:
            return
        state = self.ctx.installed(MemoryState)
        census = state.timeline.last if state is not None else None
        if census is None or census.step != self.ctx.steps:
            census = state.take(self.ctx.steps, "step", False, frame=sys._getframe(1)) if state is not None else None
        for bound in alive:
            self._explain(bound, census.big.get(bound.storage.key) if census is not None else None)

    # -- names the code deletes ------------------------------------------------------------------

    def _look(self) -> None:
        if self.ctx.steps >= WATCHED_STEPS:
            if self._bound:
                self._bound.clear()
            return
        frame = user_frame(sys._getframe(2))
        for _ in range(FRAMES):
            if frame is None:
                return
            names = deleted_names(frame.f_code)
            if names:
                self._look_at(frame, names)
            frame = user_frame(frame.f_back)

    def _look_at(self, frame: FrameType, names: dict[str, int]) -> None:
        variables = read_locals(frame)
        for name, line in names.items():
            key = (id(frame), name)
            value = variables.get(name)
            storage = storage_of(value) if is_tensor(value) else None
            found = self._bound.get(key)
            if found is not None and (storage is None or storage.key != found.storage.key):
                self._deleted.append(self._bound.pop(key))  # deleted (and maybe bound again) since it was seen
            if storage is not None and storage.nbytes >= BIG and value is not None:
                self._bound[key] = Bound(name, (frame.f_code.co_filename, line), storage, StorageWeakRef(value.untyped_storage()))

    def _explain(self, bound: Bound, big: Big | None) -> None:
        if bound.name in self._reported or (big is not None and big.owner in EXPECTED_OWNERS):
            return
        others = [(name, own) for name, own in (big.uses if big is not None else []) if name != bound.name]
        variant, holder = _holder(big, others, bound.storage.nbytes)
        self._reported.add(bound.name)
        self._reported.update(name for name, _own in others)
        self.ctx.report(DELETED, at=bound.deleted_at, key=bound.name, variant=variant,
                        fields={"name": bound.name, "size": size_text(bound.storage.nbytes)} | holder)

    # -- small views of large storages ------------------------------------------------------------

    def _census(self, census: Census) -> None:
        if census.phase != "step":
            return
        for key, big in census.big.items():
            if big.owner not in ("other", "batch") or not big.only_views:
                continue
            name, own = big.uses[0]
            if name in self._reported or not name.isidentifier() or len(big.uses) > 1:
                continue  # a collection of views: TD440's, when it grows
            site = view_site(name, key)
            if site is None:
                continue
            at, base, deleted, source = site
            self._reported.add(name)
            self.ctx.report(
                DELETED, at=at, key=name, variant="view-of-deleted" if deleted is not None else "view-out-of-scope",
                fields={"name": name, "size": size_text(own), "storage": size_text(big.nbytes), "base": base,
                        "source": source} | ({"deleted_line": deleted} if deleted is not None else {}),
                evidence={"view_bytes": own, "storage_bytes": big.nbytes},
            )


def view_site(name: str, storage: Any) -> tuple[Location, str, int | None, str] | None:
    """Where `name` is assigned a view of another name (`first = features[:8]`): that line, the
    base's name, the line of a `del base` in the same function (or None), and the view's source.
    Only in the function (or module) of a running user frame whose `name` uses that storage (its key):
    another function's `first` is another variable."""
    for filename, scope in _binding_scopes(name, storage):
        for node in own_nodes(scope):
            base = _view_of(node, name)
            if base is not None:
                deleted = next((d.lineno for d in own_nodes(scope) if isinstance(d, ast.Delete)
                                and any(isinstance(t, ast.Name) and t.id == base for t in d.targets)), None)
                source = ast.get_source_segment("".join(linecache.getlines(filename)), node.value) or f"{base}[...]"  # type: ignore[attr-defined]
                return (filename, node.lineno), base, deleted, source  # type: ignore[attr-defined]
    return None


def _binding_scopes(name: str, storage: Any) -> Iterator[tuple[str, ast.AST]]:
    """(file, function or module) of each running user frame where `name` is bound to a tensor
    in the storage of that key: a local of the function, or a global of its module."""
    frame = user_frame(sys._getframe(1))
    while frame is not None:
        code = frame.f_code
        tree = module_tree(code.co_filename)
        if tree is not None:
            if _uses(read_locals(frame).get(name), storage):
                scope = scope_of(tree, code)
                if scope is not None:
                    yield code.co_filename, scope
            elif code.co_name != "<module>" and _uses(frame.f_globals.get(name), storage):
                yield code.co_filename, tree
        frame = user_frame(frame.f_back)


def _uses(value: Any, key: Any) -> bool:
    found = storage_of(value) if is_tensor(value) else None
    return found is not None and found.key == key


def _view_of(node: ast.AST, name: str) -> str | None:
    if not (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)):
        return None
    value = node.value
    if isinstance(value, ast.IfExp):  # `x[:8].clone() if copy else x[:8]`: the view is one of them
        return _view_of(ast.Assign(targets=node.targets, value=value.orelse), name) or _view_of(
            ast.Assign(targets=node.targets, value=value.body), name)
    while True:
        if isinstance(value, ast.Subscript):
            value = value.value
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _VIEWS:
            value = value.func.value
        elif isinstance(value, ast.Attribute) and value.attr in _VIEWS:
            value = value.value
        else:
            break
    return value.id if isinstance(value, ast.Name) and value is not node.value and value.id != name else None


def _holder(big: Big | None, others: list[tuple[str, int]], nbytes: int) -> tuple[str | None, dict[str, str]]:
    """TD441's variant for what still holds the storage, and the facts it names."""
    if others:
        name, own = others[0]
        if own * 2 < nbytes:
            return "other-view", {"other": name, "other_size": size_text(own)}
        return "other-name", {"other": name}
    if big is not None and big.what.startswith("saved for backward"):
        return "saved-for-backward", {"holder": big.what}
    if big is not None and big.what.startswith("`"):
        return "named-holder", {"holder": big.what}
    return None, {}
