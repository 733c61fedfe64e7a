"""Progress on the terminal while the checks run: rich, on stderr, only when it is a terminal."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any


class Progress:
    """A transient status line ("check 3/14: gradient flow"); silent when not a terminal."""

    def __init__(self, total: int, enabled: bool | None = None) -> None:
        self.total = total
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._status: Any = None

    def __enter__(self) -> Progress:
        if self.enabled:
            from rich.console import Console

            self._status = Console(stderr=True).status("torchdoctor check: starting")
            self._status.__enter__()
        return self

    def update(self, number: int, title: str) -> None:
        if self._status is not None:
            self._status.update(f"torchdoctor check {number}/{self.total}: {title}")

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._status is not None:
            self._status.__exit__(kind, error, tb)
