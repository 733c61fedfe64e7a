"""Running the user's model once more, privately: a replay changes nothing of the real run.

A replay (of the forward pass that produced a NaN, of a compiled model's forward in eager
mode) draws its random numbers from a forked RNG, and runs with every buffer (batch norm
statistics) swapped for a copy: copying values back instead would bump the buffers' version
counters, which the real step's backward() checks. What it is given is kept by weak
reference, so that remembering a step's inputs keeps no batch alive.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn


@contextlib.contextmanager
def untouched(module: nn.Module) -> Iterator[None]:
    """A replay that leaves nothing behind: the RNG states are restored afterwards, and every
    buffer is swapped for a copy while it runs (see the module's doc)."""
    devices = sorted({p.device.index or 0 for p in module.parameters() if p.device.type == "cuda"})
    swapped = []
    for owner in module.modules():
        for name, buffer in list(owner._buffers.items()):
            if buffer is not None:
                owner._buffers[name] = buffer.clone()
                swapped.append((owner, name, buffer))
    with torch.random.fork_rng(devices=devices):
        try:
            yield
        finally:
            for owner, name, buffer in swapped:
                owner._buffers[name] = buffer


def leaves(value: Any) -> Iterator[Any]:
    """Everything inside nested tuples, lists and dicts (a module's arguments, an output)."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    else:
        yield value


def _mapped(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """The same nesting of tuples, lists and dicts, with `leaf` applied to everything else."""
    if isinstance(value, tuple):
        return tuple(_mapped(v, leaf) for v in value)
    if isinstance(value, list):
        return [_mapped(v, leaf) for v in value]
    if isinstance(value, dict):
        return {k: _mapped(v, leaf) for k, v in value.items()}
    return leaf(value)


_DEAD = object()


def weak(value: Any) -> Any:
    """Tensors replaced by weak references (so capturing keeps no batch alive)."""
    return _mapped(value, lambda v: weakref.ref(v) if isinstance(v, torch.Tensor) else v)


def strong(value: Any) -> Any:
    """The inverse of `weak`; None when a tensor has been freed."""

    def alive(v: Any) -> Any:
        if isinstance(v, weakref.ref):
            target = v()
            return _DEAD if target is None else target
        return v

    result = _mapped(value, alive)
    return None if any(leaf is _DEAD for leaf in leaves(result)) else result
