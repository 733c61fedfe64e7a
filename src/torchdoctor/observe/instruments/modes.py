"""train()/eval() switches: which module the user switched, to which mode, and at which line.

`nn.Module.train` (which `eval()` calls) gets a stand-in. `train()` recurses into every child,
so only the outermost call, the one the user made, is recorded, with the user's line; the
recursive calls pass straight through (one global flag read each). Switches happen a few
times per epoch, so this costs nothing measurable.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import nn

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.observe.events import Location
from torchdoctor.observe.faults import FAULTS, passes_through
from torchdoctor.observe.instruments.compiled import traced
from torchdoctor.observe.patching import Patches


@dataclass(frozen=True)
class ModeSwitch:
    """`module.train(training)` (or `module.eval()`) was called at `location`."""

    module: nn.Module
    training: bool
    location: Location | None


class ModeSwitches:
    """The last switch of every module switched by the user, and listeners for new ones."""

    def __init__(self) -> None:
        self.last: weakref.WeakKeyDictionary[nn.Module, ModeSwitch] = weakref.WeakKeyDictionary()
        self._listeners: list[Callable[[ModeSwitch], None]] = []
        self._depth = 0

    def listen(self, listener: Callable[[ModeSwitch], None]) -> None:
        self._listeners.append(listener)

    def install(self, patches: Patches) -> None:
        original = nn.Module.train
        switches = self

        @passes_through
        def train(self: nn.Module, mode: bool = True) -> Any:
            if switches._depth or traced():
                return original(self, mode)
            switches._depth += 1
            try:
                result = original(self, mode)
            finally:
                switches._depth -= 1
            switches._switched(self, mode)
            return result

        train.__wrapped__ = original  # type: ignore[attr-defined]
        train.__doc__ = original.__doc__
        train.__qualname__ = original.__qualname__
        patches.set(nn.Module, "train", train)

    def _switched(self, module: nn.Module, mode: Any) -> None:
        try:
            switch = ModeSwitch(module, bool(mode), caller_in_user_code(3))
            self.last[module] = switch
            for listener in self._listeners:
                listener(switch)
        except Exception as exc:  # noqa: BLE001 - observing must never change what train() does
            FAULTS.add("the train()/eval() observer", exc)
