"""Shared by the integration tests: where a bug is marked in a test module."""

from __future__ import annotations

import inspect
import re


def marked_line(path: str, cls: type) -> tuple[str, int]:
    """(rule code, line number) of the `# bug: TD123` comment inside `cls`."""
    lines, first = inspect.getsourcelines(cls)
    for offset, text in enumerate(lines):
        match = re.search(r"# bug: (TD\d{3})", text)
        if match:
            return match.group(1), first + offset
    raise AssertionError(f"{cls.__name__} has no `# bug:` line")
