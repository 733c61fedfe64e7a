"""Tracebacks printed without torchdoctor's frames.

Observing puts frames of torchdoctor's into the user's calls (the stand-ins of `backward()`,
`step()`, the hooks, a DataLoader worker's fetch); a Ctrl-C that lands in one stops there. The
user's traceback must read as it would under plain python, as pytest hides its own frames:

- an uncaught exception, in the main thread (`sys.excepthook`) or another one
  (`threading.excepthook`), is printed with those frames left out of it and of the exceptions
  chained to it; the full tracebacks are then put back, so that the crash explainers, which run
  at exit, still see every frame;
- a traceback the script prints itself (`traceback.print_exc()`, `format_exc()`,
  `logging.exception()`, and the text a DataLoader worker sends back with its exception) is
  formatted from the same frames less torchdoctor's: `TracebackException`, which all of them
  use, is given the shorter chain. torchdoctor's own formatting (its faults, the crash
  explainers) keeps every frame.

Only the printing changes: the exception, its type, message and the user's frames are the same
objects. With TORCHDOCTOR_DEBUG=1 nothing is hidden.

No torch here.
"""

from __future__ import annotations

import functools
import sys
import threading
import traceback
from types import TracebackType
from typing import Any

from torchdoctor.core.locate import is_own_file
from torchdoctor.observe.faults import debugging
from torchdoctor.observe.patching import is_stand_in_frame


def install() -> None:
    """Print uncaught exceptions through `hide_own_frames`, and format the tracebacks the script
    prints itself without torchdoctor's frames (a script that sets its own `sys.excepthook` or
    `threading.excepthook` replaces this one, as it would replace python's)."""
    shown = sys.excepthook
    shown_in_thread = threading.excepthook

    def excepthook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> Any:
        if debugging():
            return shown(kind, value, tb)
        kept = hide_own_frames(value)
        try:
            return shown(kind, value, value.__traceback__ or tb)
        finally:
            _put_back(kept)

    def thread_excepthook(args: Any) -> Any:
        value = args.exc_value
        if debugging() or value is None:
            return shown_in_thread(args)
        kept = hide_own_frames(value)
        try:
            trimmed = threading.ExceptHookArgs([args.exc_type, value, value.__traceback__, args.thread])
            return shown_in_thread(trimmed)
        finally:
            _put_back(kept)

    sys.excepthook = excepthook
    threading.excepthook = thread_excepthook
    format_without_own_frames()


def format_without_own_frames() -> None:
    """`TracebackException` (behind `print_exc`, `format_exc`, `print_exception`, logging's
    `exception()` and a DataLoader worker's traceback text) leaves torchdoctor's frames out,
    unless torchdoctor is the one formatting (its faults, its crash explainers)."""
    init = traceback.TracebackException.__init__
    if getattr(init, "_torchdoctor", False):  # a second install (a forked child boots again)
        return

    @functools.wraps(init)
    def formatted_as_plain_python(self: Any, exc_type: Any, exc_value: Any, exc_traceback: Any, *args: Any, **kwargs: Any) -> None:
        if not debugging() and not _formatted_by_torchdoctor():
            exc_traceback = without_own_frames(exc_traceback)
        init(self, exc_type, exc_value, exc_traceback, *args, **kwargs)

    formatted_as_plain_python._torchdoctor = True  # type: ignore[attr-defined]
    traceback.TracebackException.__init__ = formatted_as_plain_python  # type: ignore[method-assign]


def _formatted_by_torchdoctor() -> bool:
    """True when the first caller outside the traceback module (and this one) is torchdoctor's."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename in (traceback.__file__, __file__):
        frame = frame.f_back  # type: ignore[assignment]
    return frame is not None and is_own_file(frame.f_code.co_filename)


def _put_back(kept: list[tuple[BaseException, TracebackType | None]]) -> None:
    for exception, original in kept:
        exception.__traceback__ = original


def hide_own_frames(exception: BaseException) -> list[tuple[BaseException, TracebackType | None]]:
    """Take torchdoctor's frames out of the tracebacks of `exception` and of the exceptions
    chained to it; returns (exception, its full traceback) for each one changed."""
    changed: list[tuple[BaseException, TracebackType | None]] = []
    seen: set[int] = set()
    pending: list[BaseException | None] = [exception]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        full = current.__traceback__
        trimmed = without_own_frames(full)
        if trimmed is not full:
            changed.append((current, full))
            current.__traceback__ = trimmed
        pending += [current.__cause__, current.__context__]
    return changed


def without_own_frames(tb: TracebackType | None) -> TracebackType | None:
    """`tb` itself when no frame of it is torchdoctor's, else a new chain of the other frames."""
    head = tb
    entries: list[TracebackType] = []
    hidden = False
    while tb is not None:
        code = tb.tb_frame.f_code
        if is_own_file(code.co_filename) or is_stand_in_frame(code):
            hidden = True
            if entries and _torch_function_dispatch(entries[-1]):
                del entries[-2:]  # torch's dispatch to our mode, and the API frame that made it (it runs again inside)
        else:
            entries.append(tb)
        tb = tb.tb_next
    if not hidden:
        return head
    chain: TracebackType | None = None
    for entry in reversed(entries):
        chain = TracebackType(chain, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return chain


def _torch_function_dispatch(tb: TracebackType) -> bool:
    """The frame of torch's `handle_torch_function`: a torch function handing its call to an
    active `TorchFunctionMode` (an observer's, when the next frame is torchdoctor's)."""
    code = tb.tb_frame.f_code
    return code.co_name == "handle_torch_function" and code.co_filename.replace("\\", "/").endswith("torch/overrides.py")
