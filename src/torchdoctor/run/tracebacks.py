"""The traceback of an uncaught exception, printed without torchdoctor's frames.

Observing puts frames of torchdoctor's into the user's calls (the stand-ins of `backward()`,
`step()`, the hooks); a Ctrl-C that lands in one stops there. The user's traceback must read as
it would under plain python, as pytest hides its own frames: the hook installed here prints
each uncaught exception (and the exceptions chained to it) with those frames left out, then
puts the full tracebacks back, so that the crash explainers, which run at exit, still see
every frame. Only the printing changes: the exception, its type, message and the user's frames
are the same objects. With TORCHDOCTOR_DEBUG=1 nothing is hidden.

No torch here.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

from torchdoctor.core.locate import is_own_file
from torchdoctor.run.faults import debugging
from torchdoctor.run.patching import is_stand_in_frame


def install() -> None:
    """Print uncaught exceptions through `hide_own_frames` (a script that sets its own
    `sys.excepthook` replaces this one, as it would replace python's)."""
    shown = sys.excepthook

    def excepthook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> Any:
        if debugging():
            return shown(kind, value, tb)
        kept = hide_own_frames(value)
        try:
            return shown(kind, value, value.__traceback__ or tb)
        finally:
            for exception, original in kept:
                exception.__traceback__ = original

    sys.excepthook = excepthook


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
        else:
            entries.append(tb)
        tb = tb.tb_next
    if not hidden:
        return head
    chain: TracebackType | None = None
    for entry in reversed(entries):
        chain = TracebackType(chain, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return chain
