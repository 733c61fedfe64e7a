"""Every live tensor storage, by owner, counted once however many tensors view it.

Owners, in the order a storage is claimed (the first owner that reaches it keeps it):
parameters and buffers of the models and optimizers, their gradients, optimizer state, the
data batch (the model's inputs and the loss's targets), the in-memory datasets of the
DataLoaders seen, activations (tensors the current graph saved for backward, by the module
whose forward saved them), and every other tensor the user's code can reach, grouped by what
holds it (`holders`): the variables of the running user frames, the globals of the user's
modules, the models' other attributes and hooks, and what those reach (lists, dicts, objects,
closures, exceptions and their tracebacks), with the graphs such tensors keep alive.

A census reads: it walks objects and autograd graphs and keeps no reference to what it saw
(only sizes, ids and names). It costs a few milliseconds for a typical script, more for huge
Python structures (bounded by MAX_OBJECTS), so it runs on the first steps and when memory
grows, never on every step.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.optim.optimizer import Optimizer
from torch.utils.data import DataLoader, Dataset

from torchdoctor.core.locate import is_user_file, user_frame
from torchdoctor.introspect.frames import read_locals
from torchdoctor.observe.memory import paths
from torchdoctor.observe.memory.graphs import saved_by, saved_in, sequence_of
from torchdoctor.observe.memory.paths import Path, Step
from torchdoctor.observe.memory.storages import Storage, is_tensor, own_bytes, storage_of

OWNERS = ("parameters", "gradients", "optimizer", "batch", "dataset", "activations", "other")  # labels: table.OWNER_LABELS
#: objects visited at most by one census
MAX_OBJECTS = 200_000
#: a sequence longer than this is sampled first: a list of a million floats is skipped
LONG = 2_000
#: a view whose storage is this many times larger than the view keeps its base alive
VIEW_RATIO = 4
#: the largest storages kept (with their description) per census
LARGEST = 12
#: storages at least this large are remembered with their owner and the tensors that use them
BIG = 2**20

_ATOMS = (str, bytes, bytearray, int, float, complex, bool, type(None), type, types.ModuleType, types.CodeType,
          range, memoryview, torch.dtype, torch.device, torch.Size)
_SKIPPED_ROOTS = ("torch", "torchdoctor", "numpy", "builtins", "typing", "collections", "functools", "rich")
_MODULE_SKIPPED = frozenset({"_modules", "training", "_non_persistent_buffers_set"})
_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


@dataclass
class Holder:
    """What one named thing (a list, a dict, a variable, a closure) holds at a census."""

    path: Path
    kind: str  # "list", "dict", "deque", "set", "tuple" or "" for a single tensor
    length: int | None = None
    tensors: int = 0
    bytes: int = 0  # storages first reached through it
    own_bytes: int = 0  # what its tensors address themselves
    graphs: int = 0  # tensors that carry autograd history
    graph_bytes: int = 0  # what the graphs of its tensors saved for backward (not counted elsewhere)
    views: int = 0  # tensors that are small views of much larger storages
    view_bytes: int = 0  # the storage bytes those views keep alive
    traceback: bool = False  # reached through an exception's traceback
    detached: int = 0  # tensors without autograd history
    #: the variables of traceback frames its tensors were found in (`x` of prepare())
    frame_variables: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        return paths.render(self.path)

    @property
    def label(self) -> str:
        return paths.label(self.path)

    @property
    def total(self) -> int:
        return self.bytes + self.graph_bytes


@dataclass
class Largest:
    """One of the largest storages: how big, whose, and the user's name for it."""

    nbytes: int
    owner: str
    what: str
    device: str


@dataclass
class Big:
    """A large storage: whose it is, what it is called, and the user-named tensors that use it."""

    nbytes: int
    owner: str
    what: str
    uses: list[tuple[str, int]] = field(default_factory=list)  # (the user's name, bytes that tensor addresses)

    @property
    def only_views(self) -> bool:
        """Every named tensor that uses it addresses a small part of it: its base is gone."""
        return bool(self.uses) and all(own * VIEW_RATIO * 4 <= self.nbytes for _name, own in self.uses)


@dataclass
class Census:
    """The memory of one moment of the run, by owner (bytes), with the details findings need."""

    step: int
    phase: str  # "forward" (backward() about to run), "backward", "step", "crash"
    owners: dict[str, int] = field(default_factory=dict)
    devices: dict[str, dict[str, int]] = field(default_factory=dict)
    activations: dict[str, int] = field(default_factory=dict)  # module label -> bytes
    holders: dict[Any, Holder] = field(default_factory=dict)
    largest: list[Largest] = field(default_factory=list)
    visited: int = 0
    truncated: bool = False
    #: the user's local names that held the batch (so a later census without spans knows them)
    batch_names: set[str] = field(default_factory=set)
    #: storages of BIG bytes or more, by storage key
    big: dict[Any, Big] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.owners.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "phase": self.phase,
            "total": self.total,
            "owners": dict(self.owners),
            "devices": {device: dict(owners) for device, owners in self.devices.items()},
            "activations": dict(sorted(self.activations.items(), key=lambda kv: -kv[1])[:10]),
            "holders": [
                {"name": h.label, "kind": h.kind, "tensors": h.tensors, "bytes": h.total, "graphs": h.graphs}
                for h in sorted(self.holders.values(), key=lambda h: -h.total)[:10] if h.total
            ],
            "largest": [{"bytes": t.nbytes, "owner": t.owner, "what": t.what, "device": t.device} for t in self.largest],
        }


@dataclass
class Sources:
    """What a census starts from, given by the session."""

    models: list[nn.Module] = field(default_factory=list)
    optimizers: list[Optimizer] = field(default_factory=list)
    loaders: list[DataLoader[Any]] = field(default_factory=list)
    batch: list[torch.Tensor] = field(default_factory=list)
    #: local names that hold the batch (learnt by earlier censuses)
    batch_names: set[str] = field(default_factory=set)
    #: autograd nodes of the graph about to be backpropagated (its saved tensors are activations)
    graph_roots: list[Any] = field(default_factory=list)
    #: the innermost module forward that created a node with that sequence number (or None)
    module_at: Any = None
    #: a label for a module ("Linear `fc1`")
    module_label: Any = None
    #: the frame the census is taken from (its user frames and those around it are roots)
    frame: types.FrameType | None = None
    #: more roots: (path, object), e.g. the frames of a crash's traceback
    extra: list[tuple[Path, Any]] = field(default_factory=list)
    #: walk the globals of every user module loaded (`run`: the process is the user's script), or
    #: only those of the modules whose code is running (`watch()`: the process may be a test
    #: runner or a notebook server holding much else, which a census must not walk each time)
    all_user_modules: bool = True


class _Walk:
    """One census in progress."""

    def __init__(self, census: Census, sources: Sources) -> None:
        self.census = census
        self.sources = sources
        self.claimed: dict[Any, str] = {}
        self.sizes: dict[Any, int] = {}
        self.what: dict[Any, str] = {}
        self.seen_nodes: set[int] = set()
        self.keep: list[Any] = []  # objects made during the walk stay alive until it ends (stable ids)
        self.running = _running_frames()  # frames on the stack: their variables are roots of their own

    def claim(self, tensor: Any, owner: str, what: str) -> Storage | None:
        """Count the tensor's storage for `owner` unless some owner already has it."""
        storage = storage_of(tensor)
        if storage is None or storage.key in self.claimed:
            return None
        self.claimed[storage.key] = owner
        self.sizes[storage.key] = storage.nbytes
        self.what[storage.key] = what
        census = self.census
        if storage.nbytes >= BIG:
            census.big[storage.key] = Big(storage.nbytes, owner, what)
        census.owners[owner] = census.owners.get(owner, 0) + storage.nbytes
        per_device = census.devices.setdefault(storage.device, {})
        per_device[owner] = per_device.get(owner, 0) + storage.nbytes
        return storage

    def largest(self) -> list[Largest]:
        ranked = sorted(self.sizes.items(), key=lambda kv: -kv[1])[:LARGEST]
        return [Largest(size, self.claimed[key], self.what[key], key[0]) for key, size in ranked]


def take(step: int, phase: str, sources: Sources) -> Census:
    """A census of the live tensor storages now (see the module's doc)."""
    census = Census(step, phase)
    walk = _Walk(census, sources)
    _claim_models(walk, sources)
    for tensor in sources.batch:
        walk.claim(tensor, "batch", "the data batch")
    for loader in sources.loaders:
        dataset = getattr(loader, "dataset", None)
        if dataset is not None:
            _traverse(walk, [((Step(paths.DATASET, f"{type(dataset).__name__} (a DataLoader's dataset)"),), dataset)], "dataset")
    _claim_activations(walk, sources)
    _traverse(walk, list(_roots(sources)), "other")
    census.largest = walk.largest()
    return census


def _claim_models(walk: _Walk, sources: Sources) -> None:
    params: list[tuple[str, Any]] = []
    for model in sources.models:
        params.extend(model.named_parameters())
        for name, buffer in model.named_buffers():
            walk.claim(buffer, "parameters", f"buffer `{name}`")
    for optimizer in sources.optimizers:
        for group in optimizer.param_groups:
            params.extend(("", p) for p in group["params"])
    for name, param in params:
        walk.claim(param, "parameters", f"parameter `{name}`" if name else "a parameter")
    for name, param in params:
        grad = param.grad
        if grad is not None:
            walk.claim(grad, "gradients", f"the gradient of `{name}`" if name else "a gradient")
    for optimizer in sources.optimizers:
        kind = type(optimizer).__name__
        for state in list(optimizer.state.values()):
            for tensor in _nested_tensors(state):
                walk.claim(tensor, "optimizer", f"{kind} state")


def _claim_activations(walk: _Walk, sources: Sources) -> None:
    """The tensors the graph about to be backpropagated saved, each counted for the earliest
    node that saved it: the module that produced it (a ReLU's output, which the next Linear
    saves too, is the ReLU's)."""
    if not sources.graph_roots:
        return
    census = walk.census
    saved = sorted(saved_in(sources.graph_roots, walk.seen_nodes), key=lambda pair: sequence_of(pair[0]))
    for node, tensor in saved:
        module = sources.module_at(sequence_of(node)) if sources.module_at is not None else None
        label = sources.module_label(module) if module is not None and sources.module_label else type(node).__name__
        storage = walk.claim(tensor, "activations", f"saved by {label}")
        if storage is not None:
            census.activations[label] = census.activations.get(label, 0) + storage.nbytes


def _nested_tensors(value: Any, depth: int = 3) -> Iterator[Any]:
    if is_tensor(value):
        yield value
    elif depth and isinstance(value, dict):
        for item in list(value.values()):
            yield from _nested_tensors(item, depth - 1)
    elif depth and isinstance(value, (list, tuple)):
        for item in value:
            yield from _nested_tensors(item, depth - 1)


def _roots(sources: Sources) -> Iterator[tuple[Path, Any]]:
    """Where the user's names start: the running user frames (innermost first), the globals of
    the user's modules, the models, and any extra roots (a crash's frames)."""
    yield from sources.extra
    frame = user_frame(sources.frame)
    seen_globals: set[int] = set()
    running: dict[int, dict[str, Any]] = {}  # the globals of the running user frames' modules, by id
    while frame is not None:
        running.setdefault(id(frame.f_globals), frame.f_globals)
        code = frame.f_code
        where = (code.co_filename, code.co_firstlineno, code.co_name)
        if code.co_name == "<module>" and not code.co_flags & inspect.CO_OPTIMIZED:
            seen_globals.add(id(frame.f_globals))
            yield from (((Step(paths.GLOBAL, name, where),), value) for name, value in _module_names(frame.f_globals))
        else:
            for name, value in read_locals(frame).items():
                yield (Step(paths.LOCAL, name, where),), value
        frame = user_frame(frame.f_back)
    if sources.all_user_modules:
        namespaces = [(getattr(m, "__dict__", None), getattr(m, "__file__", None) or "") for m in list(sys.modules.values())]
    else:
        namespaces = [(g, g.get("__file__") or "") for g in running.values()]
    for namespace, filename in namespaces:
        if namespace is None or id(namespace) in seen_globals or not is_user_file(filename):
            continue
        where = (filename, 1, "<module>")
        yield from (((Step(paths.GLOBAL, name, where),), value) for name, value in _module_names(namespace))
    for model in sources.models:
        yield (Step(paths.MODEL, type(model).__name__),), model


def _module_names(namespace: dict[str, Any]) -> list[tuple[str, Any]]:
    """A module's own names: not its import machinery (`__loader__`, `__spec__`, `__builtins__`),
    whose loader may hold a whole host process (pytest's assertion rewriter holds its session
    and every test item: a census under `watch()` in pytest-xdist walked them all)."""
    return [(name, value) for name, value in list(namespace.items()) if not (name.startswith("__") and name.endswith("__"))]


def _traverse(walk: _Walk, start: list[tuple[Path, Any]], owner: str) -> None:
    """Breadth first from `start`: claim each tensor reached for `owner` (the rest: by holder);
    what a DataLoader reached on the way holds is its dataset's."""
    census = walk.census
    seen: set[int] = set()
    queue: deque[tuple[Path, Any, str]] = deque((path, value, owner) for path, value in start)
    walk.keep.append(start)
    while queue:
        if census.visited >= MAX_OBJECTS:
            census.truncated = True
            return
        path, value, owned = queue.popleft()
        if id(value) in seen or isinstance(value, _ATOMS):
            continue
        seen.add(id(value))
        census.visited += 1
        if is_tensor(value):
            _found(walk, path, value, owned)
            continue
        if isinstance(value, DataLoader):
            dataset = getattr(value, "dataset", None)
            if dataset is not None:
                queue.append(((*path, Step(paths.ATTR, "dataset")), dataset, "dataset"))
            continue
        for child_path, child in _children(path, value, walk):
            queue.append((child_path, child, owned))


def _found(walk: _Walk, path: Path, tensor: Any, owner: str) -> None:
    name = paths.render(path)
    local = len(path) == 1 and path[0].kind in (paths.LOCAL, paths.GLOBAL)  # a variable (a script's globals too)
    if owner == "other" and local and name in walk.sources.batch_names:
        owner = "batch"
    if owner == "other" and isinstance(tensor, nn.Parameter):  # of a module no model or optimizer holds
        walk.claim(tensor, "parameters", f"parameter `{name}`")
        if tensor.grad is not None:
            walk.claim(tensor.grad, "gradients", f"the gradient of `{name}`")
        return
    storage = walk.claim(tensor, owner, f"`{name}`")
    key = storage.key if storage is not None else _key(tensor)
    if local and storage is None and walk.claimed.get(key) == "batch":
        walk.census.batch_names.add(name)
    big = walk.census.big.get(key)
    if big is not None:
        big.uses.append((name, own_bytes(tensor)))
    if owner != "other":
        return
    holder = _holder(walk, path)
    holder.tensors += 1
    own = own_bytes(tensor)
    holder.own_bytes += own
    if storage is not None:
        holder.bytes += storage.nbytes
        if storage.nbytes >= VIEW_RATIO * max(own, 1) and storage.nbytes >= 4096:
            holder.views += 1
            holder.view_bytes += storage.nbytes
    if paths.through_traceback(path):
        holder.traceback = True
        variable = next((step for step in reversed(path) if step.kind == paths.FRAME_LOCAL), None)
        if variable is not None and variable.where is not None:
            holder.frame_variables.add(f"`{variable.text}` of {variable.where[2]}()")
    grad_fn = getattr(tensor, "grad_fn", None)
    if grad_fn is None:
        holder.detached += 1
        return
    holder.graphs += 1
    for _node, saved in saved_in([grad_fn], walk.seen_nodes):
        kept = walk.claim(saved, "other", f"saved for backward by the graph of `{paths.render(path)}`")
        if kept is not None:
            holder.graph_bytes += kept.nbytes


def _key(tensor: Any) -> Any:
    storage = storage_of(tensor)
    return storage.key if storage is not None else None


def _holder(walk: _Walk, path: Path) -> Holder:
    container_path = paths.holder_of(path)
    key = paths.label(container_path)
    holder = walk.census.holders.get(key)
    if holder is None:
        holder = walk.census.holders[key] = Holder(container_path, "")
    return holder


def _children(path: Path, value: Any, walk: _Walk) -> Iterable[tuple[Path, Any]]:
    """What a value holds, each with the path that reaches it."""
    kind = type(value)
    if kind in (list, tuple, deque) or isinstance(value, (list, tuple, deque)):
        _note_collection(walk, path, value)
        return _items(path, value)
    if isinstance(value, dict):
        _note_collection(walk, path, value)
        return _mapping(path, value)
    if isinstance(value, (set, frozenset)):
        _note_collection(walk, path, value)
        return (((*path, Step(paths.ITEM, "...")), item) for item in list(value) if not isinstance(item, _ATOMS))
    if isinstance(value, nn.Module):
        return _module_children(path, value)
    if isinstance(value, (types.FunctionType, types.MethodType)):
        return _function_children(path, value)
    if isinstance(value, BaseException):
        return _exception_children(path, value)
    if isinstance(value, types.TracebackType):
        return _traceback_children(path, value, walk)
    if isinstance(value, Dataset):
        return _attributes(path, value)
    if isinstance(value, (Optimizer, DataLoader)) or _library_object(kind):
        return ()
    return _attributes(path, value)


def _note_collection(walk: _Walk, path: Path, value: Any) -> None:
    """A collection reached by a path: its length, for the holder its tensors will belong to."""
    key = paths.label(path)
    holder = walk.census.holders.get(key)
    if holder is None:
        holder = walk.census.holders[key] = Holder(path, type(value).__name__)
    holder.kind = "dict" if isinstance(value, dict) else type(value).__name__
    try:
        holder.length = len(value)
    except TypeError:
        holder.length = None


def _items(path: Path, value: Any) -> Iterator[tuple[Path, Any]]:
    items = list(value)
    if len(items) > LONG and not any(_interesting(items[i]) for i in range(0, len(items), max(1, len(items) // 64))):
        return
    for index, item in enumerate(items):
        if not isinstance(item, _ATOMS):
            yield (*path, Step(paths.ITEM, str(index))), item


def _mapping(path: Path, value: dict[Any, Any]) -> Iterator[tuple[Path, Any]]:
    try:
        entries = list(value.items())
    except Exception:  # noqa: BLE001 - a mapping changed or guarded by its owner
        return
    if len(entries) > LONG and not any(_interesting(entries[i][1]) for i in range(0, len(entries), max(1, len(entries) // 64))):
        return
    for key, item in entries:
        label = repr(key) if isinstance(key, (str, int)) else f"<{type(key).__name__}>"
        if is_tensor(key):
            yield (*path, Step(paths.KEY, label)), key
        if not isinstance(item, _ATOMS):
            yield (*path, Step(paths.KEY, label)), item


def _interesting(value: Any) -> bool:
    return not isinstance(value, _ATOMS)


def _module_children(path: Path, module: nn.Module) -> Iterator[tuple[Path, Any]]:
    state = module.__dict__
    for name, child in list(state.get("_modules", {}).items()):
        if child is not None:
            yield (*path, Step(paths.ATTR, name)), child
    for name, value in list(state.items()):
        if name in _MODULE_SKIPPED or isinstance(value, _ATOMS):
            continue
        if name in ("_parameters", "_buffers"):  # a model's are counted already; a module no model holds is not
            for key, tensor in list(value.items()):
                if tensor is not None:
                    yield (*path, Step(paths.ATTR, key)), tensor
            continue
        if name in _HOOK_DICTS:
            for hook in list(value.values()):
                label = name.strip("_").replace("_", " ")[:-1]
                yield (*path, Step(paths.HOOK, f"{label} `{getattr(hook, '__name__', 'hook')}`")), hook
            continue
        if name.startswith("_") and isinstance(value, dict) and not value:
            continue
        yield (*path, Step(paths.ATTR, name)), value


def _function_children(path: Path, function: Any) -> Iterator[tuple[Path, Any]]:
    if isinstance(function, types.MethodType):
        yield path, function.__self__
        return
    cells = function.__closure__ or ()
    for name, cell in zip(function.__code__.co_freevars, cells):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if not isinstance(value, _ATOMS):
            yield (*path, Step(paths.CLOSURE, f"{name}", _where(function.__code__))), value
    for value in function.__defaults__ or ():
        if not isinstance(value, _ATOMS):
            yield path, value


def _where(code: types.CodeType) -> tuple[str, int, str]:
    return (code.co_filename, code.co_firstlineno, code.co_name)


def _exception_children(path: Path, error: BaseException) -> Iterator[tuple[Path, Any]]:
    if error.__traceback__ is not None:
        yield (*path, Step(paths.TRACEBACK, "")), error.__traceback__
    for value in (error.__context__, error.__cause__, *error.args):
        if value is not None and not isinstance(value, _ATOMS):
            yield path, value


def _traceback_children(path: Path, tb: types.TracebackType | None, walk: _Walk) -> Iterator[tuple[Path, Any]]:
    while tb is not None:
        frame = tb.tb_frame
        code = frame.f_code
        if id(frame) not in walk.running and is_user_file(code.co_filename):
            variables = read_locals(frame)
            walk.keep.append(variables)
            for name, value in variables.items():
                if not isinstance(value, _ATOMS):
                    yield (*path, Step(paths.FRAME_LOCAL, name, _where(code))), value
        tb = tb.tb_next


def _running_frames() -> set[int]:
    frames: set[int] = set()
    frame: types.FrameType | None = sys._getframe()
    while frame is not None:
        frames.add(id(frame))
        frame = frame.f_back
    return frames


def _library_object(kind: type) -> bool:
    module = getattr(kind, "__module__", "") or ""
    return module.split(".")[0] in _SKIPPED_ROOTS


def _attributes(path: Path, value: Any) -> Iterator[tuple[Path, Any]]:
    try:
        state = object.__getattribute__(value, "__dict__")
    except Exception:  # noqa: BLE001 - no instance dict (slots, C objects)
        state = None
    if isinstance(state, dict):
        for name, item in list(state.items()):
            if not isinstance(item, _ATOMS):
                yield (*path, Step(paths.ATTR, str(name))), item
    for cls in type(value).__mro__:
        for name in cls.__dict__.get("__slots__", ()) if isinstance(cls.__dict__.get("__slots__", ()), (tuple, list)) else ():
            try:
                item = object.__getattribute__(value, name)
            except Exception:  # noqa: BLE001 - an unset slot
                continue
            if not isinstance(item, _ATOMS):
                yield (*path, Step(paths.ATTR, name)), item


def graph_bytes(tensor: Any, claimed: Iterable[Any] = ()) -> int:
    """What the graph behind one tensor saved for backward, by storage (for explanations)."""
    grad_fn = getattr(tensor, "grad_fn", None)
    if grad_fn is None:
        return 0
    skip = set(claimed)
    total = 0
    for _node, saved in saved_in([grad_fn]):
        storage = storage_of(saved)
        if storage is not None and storage.key not in skip:
            skip.add(storage.key)
            total += storage.nbytes
    return total


__all__ = ["OWNERS", "Census", "Holder", "Largest", "Sources", "take", "graph_bytes", "saved_by"]
