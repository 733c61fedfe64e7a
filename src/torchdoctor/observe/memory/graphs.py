"""The tensors an autograd graph saved for backward, read without unpacking them.

Each node exposes its saved variables as `_raw_saved_<name>` (a `SavedTensor`, or a list of
them). Its `.data` is the tensor as stored, read without running an unpack hook: unpacking
(`_saved_<name>`) would run the user's saved-tensor hooks (torch.utils.checkpoint recomputes
the forward there; offloading hooks copy back to the device). After backward() has freed a
graph, `.data` is None: the graph keeps only its nodes. A custom `autograd.Function` keeps
`save_for_backward` tensors the same way and anything else on its `ctx` (the node's `__dict__`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import torch

from torchdoctor.observe.memory.storages import is_tensor

_SAVED_NAMES: dict[type, tuple[str, ...]] = {}
#: nodes visited at most per walk: a graph chained across thousands of steps is walked in part
MAX_NODES = 200_000


def _saved_names(kind: type) -> tuple[str, ...]:
    names = _SAVED_NAMES.get(kind)
    if names is None:
        names = _SAVED_NAMES[kind] = tuple(name for name in dir(kind) if name.startswith("_raw_saved_"))
    return names


def saved_by(node: Any) -> list[torch.Tensor]:
    """The tensors one node still holds for backward (none once backward() freed them)."""
    found: list[torch.Tensor] = []
    for name in _saved_names(type(node)):
        try:
            raw = getattr(node, name)
        except Exception:  # noqa: BLE001 - an exotic node: nothing to read
            continue
        for item in raw if isinstance(raw, (list, tuple)) else (raw,):
            data = getattr(item, "data", None)
            if is_tensor(data):
                found.append(data)
    extra = getattr(node, "__dict__", None)  # a custom Function's ctx attributes
    if extra:
        for value in list(extra.values()):
            for item in value if isinstance(value, (list, tuple)) else (value,):
                if is_tensor(item):
                    found.append(item)
    return found


def saved_in(roots: Iterable[Any], seen: set[int] | None = None, max_nodes: int = MAX_NODES) -> Iterator[tuple[Any, torch.Tensor]]:
    """(node, tensor) for each tensor saved by the graph below `roots`; nodes whose id is in
    `seen` are skipped (and every node visited is added to it), so several walks over graphs
    that share nodes count each node once."""
    seen = set() if seen is None else seen
    stack = [root for root in roots if root is not None]
    visited = 0
    while stack and visited < max_nodes:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        visited += 1
        for tensor in saved_by(node):
            yield node, tensor
        stack.extend(child for child, _ in getattr(node, "next_functions", ()) if child is not None)


def sequence_of(node: Any) -> int:
    try:
        return int(node._sequence_nr())
    except Exception:  # noqa: BLE001 - not an autograd node
        return -1
