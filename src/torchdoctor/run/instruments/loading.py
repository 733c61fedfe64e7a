"""`nn.Module.load_state_dict` calls and what they returned.

`nn.Module.load_state_dict` gets a stand-in that calls the original (from a frame that looks
like the caller's line, as `patching.observed` does, so a warning names the user's line) and
hands listeners the module, the mapping given, the `strict` flag and the result. The result
is returned unchanged, and nothing is read from the model: no `state_dict()` call (on FSDP
that would gather the weights), only the keys of the mapping and the returned lists.
Loads happen a few times per run, so this costs nothing measurable.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from torchdoctor.run.patching import Patches, as_caller

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
        listeners = self._listeners
        make_caller, frame_of = as_caller, sys._getframe

        def load_state_dict(*args: Any, **kwargs: Any) -> Any:
            if not listeners or torch.compiler.is_compiling():
                return original(*args, **kwargs)
            result = make_caller(frame_of(1))(original, args, kwargs)
            try:
                load = _load(args, kwargs, result)
                if load is not None:
                    for listener in listeners:
                        listener(load)
            except Exception:  # noqa: BLE001, S110 - observing must never change what the load returns
                pass
            return result

        for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(load_state_dict, attribute, getattr(original, attribute))
        load_state_dict.__wrapped__ = original  # type: ignore[attr-defined]  # inspect.signature sees the original's
        load_state_dict.__torchdoctor_original__ = original  # type: ignore[attr-defined]
        patches.set(nn.Module, "load_state_dict", load_state_dict)


def _load(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> StateLoad | None:
    if not args or not isinstance(args[0], nn.Module):
        return None
    state = args[STATE_POSITION] if len(args) > STATE_POSITION else kwargs.get("state_dict")
    strict = args[STRICT_POSITION] if len(args) > STRICT_POSITION else kwargs.get("strict", True)
    # torch tests `if strict:`; anything but a plain flag (a tensor, an object) counts as strict here
    flag = bool(strict) if strict is None or isinstance(strict, (bool, int)) else True
    return StateLoad(args[0], state, flag, result)
