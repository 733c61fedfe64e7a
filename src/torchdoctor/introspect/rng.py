"""Random generator objects stored on a dataset (or anything): every copy of the object, such
as a DataLoader worker's, starts from the same generator state."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import torch

try:  # NumPy is optional for torch
    import numpy as np
except ImportError:  # pragma: no cover
    np = None  # type: ignore[assignment]


def rng_objects(root: Any, depth: int = 2) -> Iterator[tuple[str, Any]]:
    """`(attribute path, generator)` for random generators stored on `root` (a dataset),
    looking into attributes, lists and dicts up to `depth` levels (transforms)."""
    seen: set[int] = set()

    def walk(obj: Any, path: str, level: int) -> Iterator[tuple[str, Any]]:
        if id(obj) in seen or level > depth:
            return
        seen.add(id(obj))
        if is_generator(obj):
            yield path, obj
            return
        if isinstance(obj, (torch.Tensor, str, bytes, int, float, type)) or obj is None:
            return
        if isinstance(obj, dict):
            items = [(f"{path}[{k!r}]", v) for k, v in list(obj.items())[:64]]
        elif isinstance(obj, (list, tuple)):
            items = [(f"{path}[{i}]", v) for i, v in enumerate(obj[:64])]
        else:
            attributes = getattr(obj, "__dict__", None)
            if not isinstance(attributes, dict):
                return
            items = [(f"{path}.{k}" if path else k, v) for k, v in list(attributes.items())[:256]]
        for child_path, child in items:
            yield from walk(child, child_path, level + 1)

    yield from walk(root, "", 0)


def is_generator(obj: Any) -> bool:
    """A random generator object whose state a copy would duplicate."""
    if isinstance(obj, (random.Random, torch.Generator)):
        return True
    return np is not None and isinstance(obj, (np.random.Generator, np.random.RandomState))
