"""torchdoctor's own failures while it observes: contained, recorded, and reported as its own.

Every callback torchdoctor hands to PyTorch (hooks, stand-ins, detectors) runs inside the
user's program. An exception raised there is torchdoctor's bug, never the user's: it must not
reach the script (which would then crash on a line it did not get wrong), and the report must
say that observation was incomplete. `contain()` wraps such a callback: the first exception
is recorded and the callback steps aside for the rest of the run; the user's call goes on as
if torchdoctor were not there. With TORCHDOCTOR_DEBUG=1 the internal traceback is printed at
once (on the script's stderr) and kept in the finding's evidence.

No torch here.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType
from typing import Any, TypeVar

ENV_DEBUG = "TORCHDOCTOR_DEBUG"
#: at most this many distinct faults are kept per process
MAX_FAULTS = 20

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Fault:
    """One failure of torchdoctor's own code: where (an observer's name) and what."""

    where: str
    error: str
    traceback: str


class Faults:
    """The faults of this process; `listener` (the session) turns each new one into a finding."""

    def __init__(self) -> None:
        self.seen: list[Fault] = []
        self.listener: Callable[[Fault], None] | None = None

    def add(self, where: str, exc: BaseException) -> None:
        error = f"{type(exc).__name__}: {exc}".strip()
        if len(error) > 200:
            error = error[:197] + "..."
        if any(f.where == where and f.error == error for f in self.seen) or len(self.seen) >= MAX_FAULTS:
            return
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        fault = Fault(where, error, text)
        self.seen.append(fault)
        if debugging():
            print(f"torchdoctor: internal error in {where} (it steps aside; your script goes on):\n{text}", file=sys.stderr, end="")
        if self.listener is not None:
            try:
                self.listener(fault)
            except Exception:  # noqa: BLE001, S110 - reporting a fault must not raise a second one
                pass


FAULTS = Faults()


def debugging() -> bool:
    return bool(os.environ.get(ENV_DEBUG))


def contain(where: str, callback: F, default: Any = None) -> F:
    """`callback`, except that an exception inside it is recorded as torchdoctor's fault,
    `default` is returned instead, and every later call returns `default` at once (the
    observer steps aside for the rest of the run)."""
    failed = False

    def contained(*args: Any, **kwargs: Any) -> Any:
        nonlocal failed
        if failed:
            return default
        try:
            return callback(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - torchdoctor's bug must never reach the user's program
            failed = True
            FAULTS.add(where, exc)
            return default

    contained.__wrapped__ = callback  # type: ignore[attr-defined]
    return contained  # type: ignore[return-value]


_PASS_THROUGH: set[CodeType] = set()


def passes_through(function: F) -> F:
    """Mark a stand-in whose frame only passes the user's call on to the original: an
    exception seen in that frame came from the original, and belongs to the user's call."""
    _PASS_THROUGH.add(function.__code__)
    return function


def is_pass_through(code: CodeType) -> bool:
    return code in _PASS_THROUGH


def own_codes() -> frozenset[CodeType]:
    """The code of every stand-in marked so far, and of the wrapper `contain()` makes: the
    frames torchdoctor adds to the user's calls."""
    return frozenset({*_PASS_THROUGH, contain(".", len).__code__})
