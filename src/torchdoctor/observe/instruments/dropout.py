"""Functional dropout calls that rely on the default `training=True`.

`F.dropout` and `F.dropout1d/2d/3d` get observing stand-ins. `nn.Dropout` passes
`self.training` positionally, so its calls leave after one length check; only calls without
a `training` argument reach the listeners, with the caller's frame (to find the module whose
forward made the call). `alpha_dropout` and `feature_alpha_dropout` default to
`training=False` and are left alone.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch.nn.functional as F

from torchdoctor.observe.instruments.compiled import traced
from torchdoctor.observe.patching import Patches, observed

#: dropout functions whose `training` argument (third, after input and p) defaults to True
DEFAULT_TRAINING = ("dropout", "dropout1d", "dropout2d", "dropout3d")
TRAINING_POSITION = 2

#: (function name, p, the frame that called it)
Listener = Callable[[str, float, FrameType], None]


class FunctionalDropout:
    """Tells listeners about dropout calls that leave `training` at its default."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def install(self, patches: Patches) -> None:
        for name in DEFAULT_TRAINING:
            original = getattr(F, name, None)
            if original is not None:
                patches.set(F, name, observed(original, self._before(name), skip=traced))

    def _before(self, name: str) -> Callable[[tuple[Any, ...], dict[str, Any]], None]:
        listeners = self._listeners

        def before(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            if len(args) > TRAINING_POSITION or "training" in kwargs:
                return
            p = args[1] if len(args) > 1 else kwargs.get("p", 0.5)
            caller = sys._getframe(2)  # before <- the stand-in <- the caller
            for listener in listeners:
                listener(name, float(p), caller)

        return before
