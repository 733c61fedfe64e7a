"""One-step op tracing, on request: a TorchFunctionMode that sees every torch call, for one step.

A no-op TorchFunctionMode alone costs about 1.3x (research/runtime-anchors.md), so it is
never on by default. A detector that saw something wrong asks for one traced step (for
example to find the line that cuts the graph, or where a softmax was computed); the session
pushes this mode after a backward() returns and pops it when the next backward() starts,
which covers the data loading, forward pass and loss of exactly one step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch
from torch.overrides import TorchFunctionMode

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.observe.events import Location
from torchdoctor.observe.faults import FAULTS, passes_through
from torchdoctor.observe.patching import call_in_mode


class Watcher(Protocol):
    """What a detector hands to `Session.trace_next_step`."""

    #: names of the torch functions and Tensor methods to see ("detach", "item", "softmax",
    #: and attribute reads such as "data")
    functions: frozenset[str]

    def seen(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, location: Location | None) -> None:
        """One call of a watched function, with the user's line that made it."""

    def done(self) -> None:
        """The traced step is over (or the run ended during it)."""


def function_name(func: Callable[..., Any]) -> str:
    """`softmax` for torch.softmax, F.softmax and Tensor.softmax; `data` for reading `.data`."""
    name = getattr(func, "__name__", "")
    if name == "__get__":
        owner = getattr(func, "__self__", None)
        return str(getattr(owner, "__name__", name))
    return str(name)


class OpTrace(TorchFunctionMode):
    """Calls the watchers for the functions they asked for; changes no result."""

    def __init__(self, watchers: list[Watcher]) -> None:
        super().__init__()
        self.watchers: list[Watcher] = []
        self.active = True
        self._by_name: dict[str, list[Watcher]] = {}
        for watcher in watchers:
            self.add(watcher)

    def add(self, watcher: Watcher) -> None:
        if watcher not in self.watchers:
            self.watchers.append(watcher)
            self._index(watcher)

    def _index(self, watcher: Watcher) -> None:
        for name in watcher.functions:
            self._by_name.setdefault(name, []).append(watcher)

    @passes_through
    def __torch_function__(
        self, func: Callable[..., Any], types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        result = call_in_mode(func, args, kwargs)
        if self.active:
            watchers = self._by_name.get(function_name(func))
            if watchers:
                location = caller_in_user_code()
                for watcher in watchers:
                    try:
                        watcher.seen(function_name(func), args, kwargs, result, location)
                    except Exception as exc:  # noqa: BLE001 - a watcher must never change the run
                        FAULTS.add(f"{type(watcher).__name__}.seen", exc)
        return result

    def begin(self) -> None:
        self.__enter__()

    def end(self) -> bool:
        """Stop watching, tell the watchers, and take this mode off the stack (from under any mode
        pushed after it). False when it could not be: while torch runs this mode's own
        `__torch_function__` (e.g. for `Tensor.backward`), it is off the stack and torch puts it
        back afterwards; call `leave()` again later."""
        if self.active:
            self.active = False
            for watcher in self.watchers:
                try:
                    watcher.done()
                except Exception as exc:  # noqa: BLE001 - same as above
                    FAULTS.add(f"{type(watcher).__name__}.done", exc)
        return self.leave()

    def leave(self) -> bool:
        return remove_from_stack(self)

    def resume(self) -> None:
        """Back on top of the mode stack after `leave()` (around a compiled region)."""
        torch._C._push_on_torch_function_stack(self)


def remove_from_stack(mode: TorchFunctionMode) -> bool:
    """Pop the modes above `mode`, pop it, push the others back in their order."""
    stack = torch.overrides._get_current_function_mode_stack()
    if not any(entry is mode for entry in stack):
        return False
    above = []
    while True:
        top = torch._C._pop_torch_function_stack()
        if top is mode:
            break
        above.append(top)
    for entry in reversed(above):
        torch._C._push_on_torch_function_stack(entry)
    return True
