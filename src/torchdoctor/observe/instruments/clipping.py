"""Gradient clipping calls, and what a GradScaler did to the gradients before them.

`clip_grad_norm_` / `clip_grad_value_` get observing stand-ins in `torch.nn.utils` and in
`torch.nn.utils.clip_grad` (where they live; the deprecated `clip_grad_norm` calls through
it). `GradScaler.scale`, `unscale_` and `update` get stand-ins too: `scale` remembers the
tensors it returns, so a backward() of one of them is known to produce scaled gradients, and
`unscale_` remembers which optimizers' gradients are back to their true size.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.amp import GradScaler
from torch.nn.utils import clip_grad

from torchdoctor.introspect.tensors import tensors_in
from torchdoctor.observe.faults import FAULTS, passes_through
from torchdoctor.observe.instruments.compiled import traced
from torchdoctor.observe.patching import Patches, observed

CLIPPERS = ("clip_grad_norm_", "clip_grad_value_")


@dataclass(frozen=True)
class Clip:
    """`torch.nn.utils.<function>(parameters, ...)` is about to run."""

    function: str
    parameters: tuple[torch.Tensor, ...]
    limit: Any  # max_norm / clip_value (inf: a call that only measures the norm)


@dataclass
class ScalerState:
    """What the GradScalers of the process did since their last `update()`."""

    #: id() of tensors `scale()` returned that are still alive -> (the tensor, weakly; the scale it
    #: was multiplied by: the scaler's own tensor, changed only by `update()`)
    scaled: dict[int, tuple[weakref.ref[torch.Tensor], torch.Tensor | None]] = field(default_factory=dict)
    #: optimizers unscaled since the last `update()` (ids)
    unscaled: set[int] = field(default_factory=set)
    #: `scaler.step(optimizer)` calls, by optimizer id (the step runs only without Inf/NaN)
    steps: dict[int, int] = field(default_factory=dict)
    #: the scalers that stepped (weakly), to read their final scale
    scalers: weakref.WeakSet[Any] = field(default_factory=weakref.WeakSet)

    def is_scaled(self, tensor: Any) -> bool:
        entry = self.scaled.get(id(tensor))
        return entry is not None and entry[0]() is tensor

    def scale_of(self, tensor: Any) -> torch.Tensor | None:
        """The scale `tensor` was multiplied by (read from the scaler, not from the autograd
        graph: unpacking a saved tensor would run the user's saved-tensor hooks)."""
        return self.scaled[id(tensor)][1] if self.is_scaled(tensor) else None


class GradientClipping:
    """Clip calls for listeners; GradScaler activity in `self.scaler`."""

    def __init__(self) -> None:
        self.scaler = ScalerState()
        self._listeners: list[Callable[[Clip], None]] = []

    def listen(self, listener: Callable[[Clip], None]) -> None:
        self._listeners.append(listener)

    def install(self, patches: Patches) -> None:
        skip = traced
        for name in CLIPPERS:
            original = getattr(clip_grad, name, None)
            if original is None:
                continue
            stand_in = self._clip(name, original)
            patches.set(clip_grad, name, stand_in)
            if getattr(torch.nn.utils, name, None) is original:
                patches.set(torch.nn.utils, name, stand_in)
        patches.set(GradScaler, "scale", _after_result(GradScaler.scale, self._scaled))
        patches.set(GradScaler, "unscale_", observed(GradScaler.unscale_, self._unscaled, skip=skip))
        patches.set(GradScaler, "update", observed(GradScaler.update, self._updated, skip=skip))
        patches.set(GradScaler, "step", observed(GradScaler.step, self._stepped, skip=skip))

    def _clip(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        """The stand-in: an iterator of parameters (`model.parameters()`) is read into a tuple
        first, which is what the clip function itself does with it, so both can see it."""
        listeners = self._listeners

        @passes_through
        def stand_in(*args: Any, **kwargs: Any) -> Any:
            if traced() or not listeners:
                return original(*args, **kwargs)
            if args:
                params = _materialized(args[0])
                args = (params, *args[1:])
            elif "parameters" in kwargs:
                kwargs["parameters"] = params = _materialized(kwargs["parameters"])
            else:
                return original(*args, **kwargs)
            try:
                limit = args[1] if len(args) > 1 else kwargs.get("max_norm", kwargs.get("clip_value"))
                event = Clip(name, (params,) if isinstance(params, torch.Tensor) else tuple(params), limit)
                for listener in listeners:
                    listener(event)
            except Exception as exc:  # noqa: BLE001 - observing must never change the clip
                FAULTS.add("the gradient clipping observer", exc)
            return original(*args, **kwargs)

        return _like(stand_in, original)

    def _scaled(self, args: tuple[Any, ...], result: Any) -> None:
        scaler = args[0]
        if not scaler.is_enabled() or result is None:
            return
        scaled = self.scaler.scaled
        scale = getattr(scaler, "_scale", None)
        for tensor in tensors_in(result):
            key = id(tensor)
            ref = weakref.ref(tensor, functools.partial(_forget, scaled, key))
            scaled[key] = (ref, scale if isinstance(scale, torch.Tensor) else None)

    def _unscaled(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        optimizer = args[1] if len(args) > 1 else kwargs.get("optimizer")
        if optimizer is not None:
            self.scaler.unscaled.add(id(optimizer))

    def _updated(self, _args: tuple[Any, ...], _kwargs: dict[str, Any]) -> None:
        self.scaler.unscaled.clear()

    def _stepped(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        scaler, optimizer = args[0], args[1] if len(args) > 1 else kwargs.get("optimizer")
        if optimizer is not None and scaler.is_enabled():
            self.scaler.steps[id(optimizer)] = self.scaler.steps.get(id(optimizer), 0) + 1
            self.scaler.scalers.add(scaler)


def _forget(scaled: dict[int, tuple[weakref.ref[torch.Tensor], torch.Tensor | None]], key: int, _ref: object) -> None:
    """A scaled tensor was freed: its id may be reused."""
    scaled.pop(key, None)


def _materialized(parameters: Any) -> Any:
    return parameters if isinstance(parameters, (torch.Tensor, list, tuple)) else tuple(parameters)


def _like(stand_in: Callable[..., Any], original: Callable[..., Any]) -> Callable[..., Any]:
    stand_in.__wrapped__ = original  # type: ignore[attr-defined]
    for attribute in ("__name__", "__qualname__", "__doc__", "__module__"):
        setattr(stand_in, attribute, getattr(original, attribute, None))
    return stand_in


def _after_result(original: Callable[..., Any], after: Callable[[tuple[Any, ...], Any], None]) -> Callable[..., Any]:
    """A stand-in that hands `after` the arguments and the result (observing only)."""

    @passes_through
    def stand_in(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if not traced():
            try:
                after(args, result)
            except Exception as exc:  # noqa: BLE001 - observing must never change the result
                FAULTS.add("the GradScaler observer", exc)
        return result

    return _like(stand_in, original)
