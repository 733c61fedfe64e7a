"""Applying fixes (data: `core.finding.Fix` of `Edit`s) to a source text, and showing them as diffs."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from torchdoctor.core.finding import Fix
from torchdoctor.lint.source import Source


def apply_fixes(source: Source, fixes: Iterable[Fix]) -> tuple[str, int]:
    """The text with every fix applied whose edits overlap no fix applied before it.

    Fixes are taken in source order; one that touches a range an earlier fix changed waits
    for the next round (the engine re-lints and fixes again). Returns (text, fixes applied).
    """
    spans: list[tuple[int, int, str]] = []
    taken: list[tuple[int, int]] = []
    applied = 0
    ordered = sorted(fixes, key=lambda f: min((e.line, e.column) for e in f.edits))
    for fix in ordered:
        edits = [(source.offset(e.line, e.column), source.offset(e.end_line, e.end_column), e.content) for e in fix.edits]
        if any(start > end for start, end, _ in edits):
            continue
        if any(_overlaps(start, end, other) for start, end, _ in edits for other in taken):
            continue
        spans.extend(edits)
        taken.extend((start, end) for start, end, _ in edits)
        applied += 1
    text = source.text
    for start, end, content in sorted(spans, key=lambda s: (s[0], s[1]), reverse=True):
        text = text[:start] + content + text[end:]
    return text, applied


def _overlaps(start: int, end: int, other: tuple[int, int]) -> bool:
    other_start, other_end = other
    if start == end or other_start == other_end:  # insertions clash only at the same point or inside
        return other_start < start < other_end or start < other_start < end or start == other_start
    return start < other_end and other_start < end


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=path, tofile=path,
    ))
