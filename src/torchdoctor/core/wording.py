"""Small helpers that turn lists and numbers into the words of a finding."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def listing(items: Sequence[str], limit: int = 5) -> str:
    """`a, b, c` or `a, b, c and 4 more`."""
    items = list(items)
    if len(items) <= limit:
        return ", ".join(items)
    return f"{', '.join(items[:limit])} and {len(items) - limit} more"


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """`1 error`, `2 errors`, `0 files` (`plural` for nouns that do not just take an s)."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def article(word: str) -> str:
    """`an int`, `a str`, `an nn.Linear`, `an Upsample`: the article for a type or module name
    (a leading vowel letter, or `nn.` said "en-en")."""
    return f"{'an' if word[:1].lower() in 'aeiou' or word.startswith('nn.') else 'a'} {word}"


def ranks_text(ranks: Iterable[int]) -> str:
    """[0, 1, 2, 5] -> "0-2, 5"."""
    spans: list[list[int]] = []
    for n in sorted(set(ranks)):
        if spans and spans[-1][1] == n - 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)


def ranks_named(ranks: Iterable[int]) -> str:
    """`rank 3`, `ranks 0-2, 5`."""
    numbers = sorted(set(ranks))
    return f"rank{'s' if len(numbers) != 1 else ''} {ranks_text(numbers)}"


def size_text(number: float | None) -> str:
    """Bytes as `1.5 GiB` (`-` when unknown)."""
    if number is None:
        return "-"
    value = float(number)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def shortened(text: str, width: int = 60, ellipsis: str = "...") -> str:
    """Source text on one line, cut to `width` characters (ending in `ellipsis`) for a message."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - len(ellipsis)] + ellipsis
