"""User lines in the profile: a TorchFunctionMode that wraps every torch call made from the
user's code in a profiler range named after the user's line.

The profiler sees aten ops and their time but names no source line (its Python stacks name
functions, not lines). This mode sees each torch function or Tensor method called, while the
user's frame is on the stack: the innermost user frame is the line, and a range named
`line train.py:42` around the call puts every aten op the call dispatches (and their kernels)
under that line, in the profile itself (so the Chrome trace shows the lines too).

It also samples a few calls per line: the devices of the tensors, the autocast state of the
thread, and the dispatch key set the dispatcher computes for the call (the tensors' keys, the
thread's included keys, less its excluded ones), from which trace/dispatch.py tells which
kernels served it.

Attribute reads (`p.grad`, `x.shape`) dispatch no op and get no range. While torch.compile or
torch.jit.trace records code, the mode only passes calls on; the session sets it aside around
compiled regions (`Session.set_aside`), and `leave()` then opens one range for the whole
compiled call, at the line that called it.
"""

from __future__ import annotations

import linecache
import os
import sys
from collections.abc import Callable
from typing import Any

import torch
from torch._C._profiler import _RecordFunctionFast
from torch.overrides import TorchFunctionMode

from torchdoctor.core.locate import caller_in_user_code, is_own_file, is_user_file, short_path
from torchdoctor.introspect.dispatcher import keyset_names
from torchdoctor.observe.faults import FAULTS, is_pass_through, passes_through
from torchdoctor.observe.instruments.call_watch import remove_from_stack
from torchdoctor.observe.instruments.compiled import traced
from torchdoctor.observe.patching import call_in_mode
from torchdoctor.trace.attribute import LineFacts
from torchdoctor.trace.options import COMPILED_SUFFIX, LINE_PREFIX, OWN

#: calls sampled per line for devices, autocast and dispatch keys
SAMPLED = 3
AUTOCAST_DEVICES = ("cpu", "cuda", "mps", "xpu")
#: how torch names the functions behind reading, setting and deleting a tensor's attribute
ATTRIBUTE_ACCESS = frozenset({"__get__", "__set__", "__delete__"})


class LineMarks(TorchFunctionMode):
    """See the module's doc. `lines` maps each range name to what was seen of its line."""

    def __init__(self) -> None:
        super().__init__()
        self.active = True
        self.lines: dict[str, LineFacts] = {}
        self._names: dict[tuple[str, int], str] = {}
        self._kinds: dict[Any, str] = {}
        self._region: Any = None  # the range open around a compiled call

    @passes_through
    def __torch_function__(
        self, func: Callable[..., Any], types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if not self.active or getattr(func, "__name__", "") in ATTRIBUTE_ACCESS or traced():
            return call_in_mode(func, args, kwargs)
        try:
            name = self._line_of(sys._getframe(1), args, kwargs)
        except Exception as exc:  # noqa: BLE001 - a mark must never change the user's call
            FAULTS.add("the trace's line marks", exc)
            self.active = False
            name = None
        if name is None:
            return call_in_mode(func, args, kwargs)
        with _RecordFunctionFast(name):
            return call_in_mode(func, args, kwargs)

    def _line_of(self, frame: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
        while frame is not None:
            kind = self._kinds.get(frame.f_code)
            if kind is None:
                kind = self._kinds[frame.f_code] = _kind(frame.f_code)
            if kind == "user":
                break
            if kind == "own":  # a torch call of torchdoctor's own (a detector's): not the user's time
                return OWN
            frame = frame.f_back
        if frame is None:
            return None
        place = (frame.f_code.co_filename, frame.f_lineno)
        name = self._names.get(place)
        if name is None:
            name = self._names[place] = self._new_line(*place)
        facts = self.lines[name]
        facts.calls += 1
        if facts.sampled < SAMPLED:
            _sample(facts, args, kwargs)
        return name

    def line_name(self, file: str, line: int) -> str:
        """The range name of a user line (and its facts), whether or not a torch call was made there."""
        return self._new_line(file, line)

    def _new_line(self, file: str, line: int, suffix: str = "") -> str:
        name = f"{LINE_PREFIX}{short_path(file)}:{line}{suffix}"
        if name not in self.lines:
            self.lines[name] = LineFacts(file=os.path.abspath(file), line=line, source=linecache.getline(file, line).strip())
        return name

    # -- on and off the mode stack -------------------------------------------------------------

    def begin(self) -> None:
        self.__enter__()

    def end(self) -> None:
        self.active = False
        self._close_region()
        remove_from_stack(self)

    def leave(self) -> bool:
        """Off the stack while compiled code runs (it must not see the mode); the compiled call
        gets one range, at the user's line that made it."""
        if not self.active or not remove_from_stack(self):
            return False
        place = caller_in_user_code(2)
        if place is not None:
            self._region = _RecordFunctionFast(self._new_line(*place, COMPILED_SUFFIX))
            self._region.__enter__()
        return True

    def resume(self) -> None:
        self._close_region()
        if self.active:
            torch._C._push_on_torch_function_stack(self)

    def _close_region(self) -> None:
        region, self._region = self._region, None
        if region is not None:
            region.__exit__(None, None, None)


def _kind(code: Any) -> str:
    """"user", "own" (torchdoctor's, except the stand-ins that only pass a call on), or "other"."""
    if is_pass_through(code):
        return "other"
    if is_user_file(code.co_filename):
        return "user"
    return "own" if is_own_file(code.co_filename) else "other"


def _sample(facts: LineFacts, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
    tensors += [t for a in args if isinstance(a, (list, tuple)) for t in a if isinstance(t, torch.Tensor)]
    if not tensors:
        return
    facts.sampled += 1
    keys: set[str] = set()
    for tensor in tensors[:4]:
        facts.devices.add(tensor.device.type)
        keys |= keyset_names(torch._C._dispatch_keys(tensor))
    for device in AUTOCAST_DEVICES:
        try:
            if torch.is_autocast_enabled(device):
                facts.autocast.add(device)
        except (RuntimeError, TypeError):  # a device type this torch does not know
            continue
    if keys:
        include = keyset_names(torch._C._dispatch_tls_local_include_set())
        exclude = keyset_names(torch._C._dispatch_tls_local_exclude_set())
        call = sorted((keys | include) - exclude)
        if call not in facts.keys:
            facts.keys.append(call)
