"""Running the user's model once more, privately: a replay changes nothing of the real run.

A replay (of the forward pass that produced a NaN, of a compiled model's forward in eager
mode) draws its random numbers from a forked RNG, and runs with every buffer (batch norm
statistics) swapped for a copy: copying values back instead would bump the buffers' version
counters, which the real step's backward() checks. The attributes its forward rebinds (a call
counter `self.calls += 1`, a cached mask) are put back afterwards, so the next real call sees
what it would have seen. What it is given is kept by weak reference, so that remembering a
step's inputs keeps no batch alive.
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
    """A replay that leaves nothing behind: the RNG states are restored afterwards, every
    buffer is swapped for a copy while it runs, and every module's attributes are bound again
    to what they were (see the module's doc)."""
    devices = sorted({p.device.index or 0 for p in module.parameters() if p.device.type == "cuda"})
    attributes = [(owner, dict(owner.__dict__)) for owner in module.modules()]
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
            for owner, saved in attributes:
                _rebind(owner.__dict__, saved)
            for owner, name, buffer in swapped:
                owner._buffers[name] = buffer


def _rebind(current: dict[str, Any], saved: dict[str, Any]) -> None:
    """`current` made to hold the objects of `saved` again (names added since are removed)."""
    for name in [name for name in current if name not in saved]:
        del current[name]
    for name, value in saved.items():
        if current.get(name, _DEAD) is not value:
            current[name] = value


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
