"""`nn.Module.load_state_dict` calls and what they returned.

`nn.Module.load_state_dict` gets a `patching.observed` stand-in that calls the original (from a
frame that looks like the caller's line, so a warning names the user's line) and hands
listeners the module, the mapping given, the `strict` flag and the result. The result
is returned unchanged, and nothing is read from the model: no `state_dict()` call (on FSDP
that would gather the weights), only the keys of the mapping and the returned lists.
Loads happen a few times per run, so this costs nothing measurable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import nn

from torchdoctor.observe.instruments.compiled import traced
from torchdoctor.observe.patching import Patches, observed

STATE_POSITION, STRICT_POSITION = 1, 2  # load_state_dict(self, state_dict, strict=True, assign=False)


@dataclass(frozen=True)
class StateLoad:
    """`module.load_state_dict(state, strict=...)` returned `result` (normally `_IncompatibleKeys`)."""

    module: nn.Module
    state: Any
    strict: bool
    result: Any


class StateLoads:
    """Tells listeners about every `load_state_dict` call of a module that returned."""

    def __init__(self) -> None:
        self._listeners: list[Callable[[StateLoad], None]] = []

    def listen(self, listener: Callable[[StateLoad], None]) -> None:
        self._listeners.append(listener)

    def install(self, patches: Patches) -> None:
        original = nn.Module.load_state_dict
        patches.set(nn.Module, "load_state_dict", observed(original, None, skip=traced, returned=self._returned))

    def _returned(self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        load = _load(args, kwargs, result) if self._listeners else None
        if load is not None:
            for listener in self._listeners:
                listener(load)


def _load(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> StateLoad | None:
    if not args or not isinstance(args[0], nn.Module):
        return None
    state = args[STATE_POSITION] if len(args) > STATE_POSITION else kwargs.get("state_dict")
    strict = args[STRICT_POSITION] if len(args) > STRICT_POSITION else kwargs.get("strict", True)
    # torch tests `if strict:`; anything but a plain flag (a tensor, an object) counts as strict here
    flag = bool(strict) if strict is None or isinstance(strict, (bool, int)) else True
    return StateLoad(args[0], state, flag, result)
