"""Progress on the terminal while long work runs (check's 14 checks, lint over a big tree):
a transient rich status line on stderr, never in a pipe, a file, CI or a dumb terminal.

`delay` keeps quick work silent: the line appears only once the work has taken that long.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from types import TracebackType
from typing import Any

#: environment variables that say "this is CI": logs there are read later, not watched
CI_VARIABLES = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "JENKINS_URL", "TF_BUILD")


def on_a_terminal() -> bool:
    """Whether a person is watching stderr: a terminal, not CI, not `TERM=dumb`."""
    if any(os.environ.get(name) for name in CI_VARIABLES) or os.environ.get("TERM") == "dumb":
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


class Progress:
    """`with Progress("torchdoctor check", total=14) as p: p.update(3, "gradient flow")` shows
    "torchdoctor check 3/14: gradient flow" until the block ends (then the line is erased)."""

    def __init__(self, label: str, total: int | None = None, enabled: bool | None = None, delay: float = 0.0) -> None:
        self.label = label
        self.total = total
        self.enabled = on_a_terminal() if enabled is None else enabled
        self.delay = delay
        self._started = time.monotonic()
        self._status: Any = None

    def __enter__(self) -> Progress:
        if self.enabled and self.delay <= 0:
            self._show(f"{self.label}: starting")
        return self

    def update(self, done: int, what: str = "") -> None:
        if not self.enabled:
            return
        count = f" {done}/{self.total}" if self.total is not None else f" {done}"
        text = f"{self.label}{count}{': ' + what if what else ''}"
        if self._status is not None:
            self._status.update(_line(text))
        elif time.monotonic() - self._started >= self.delay:
            self._show(text)

    def _show(self, text: str) -> None:
        from rich.console import Console

        self._status = Console(stderr=True).status(_line(text))
        self._status.__enter__()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._status is not None:
            self._status.__exit__(kind, error, tb)
            self._status = None


def _line(text: str) -> str:
    """One line that fits the terminal beside the spinner (a long path must not wrap)."""
    width = shutil.get_terminal_size(fallback=(80, 24)).columns - 3
    return text if len(text) <= width else text[: max(width - 1, 10)] + "…"
