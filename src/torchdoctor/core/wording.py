"""Small helpers that turn lists and numbers into the words of a finding."""

from __future__ import annotations

from collections.abc import Sequence


def listing(items: Sequence[str], limit: int = 5) -> str:
    """`a, b, c` or `a, b, c and 4 more`."""
    items = list(items)
    if len(items) <= limit:
        return ", ".join(items)
    return f"{', '.join(items[:limit])} and {len(items) - limit} more"
