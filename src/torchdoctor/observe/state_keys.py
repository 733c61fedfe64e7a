"""How a checkpoint's keys relate to a model's: what TD427 (a non-strict load that matched
nothing) and TD565 (a strict load that raised) read the cause from."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable


def key_prefix(longer: Iterable[str], shorter: set[str]) -> str | None:
    """The prefix `p` (ending with a dot) such that `p + key` is in `longer` for at least half of
    the keys of `shorter` (the most frequent one), or None."""
    counts: Counter[str] = Counter()
    for key in longer:
        dot = key.find(".")
        while dot != -1:
            if key[dot + 1:] in shorter:
                counts[key[: dot + 1]] += 1
            dot = key.find(".", dot + 1)
    if not counts:
        return None
    prefix, n = counts.most_common(1)[0]
    return prefix if 2 * n >= len(shorter) else None
