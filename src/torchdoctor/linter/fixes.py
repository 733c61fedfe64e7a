"""Applying fixes (data: `core.finding.Fix` of `Edit`s) to a source text, and showing them as diffs."""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Iterable

from torchdoctor.core.finding import Fix
from torchdoctor.linter.source import Source


def apply_fixes(source: Source, fixes: Iterable[Fix]) -> tuple[str, int]:
    """The text with every fix applied whose edits overlap no fix applied before it.

    Fixes are taken in source order; one that touches a range an earlier fix changed waits
    for the next round (the engine re-lints and fixes again). Returns (text, fixes applied).
    The spans taken are kept sorted, so each edit is compared with its neighbours only, and
    the text is rebuilt in one pass: linear in the file and the number of fixes.
    """
    spans: list[tuple[int, int, str]] = []
    taken: list[tuple[int, int]] = []  # sorted by (start, end)
    applied = 0
    ordered = sorted(fixes, key=lambda f: min((e.line, e.column) for e in f.edits))
    for fix in ordered:
        edits = [(source.offset(e.line, e.column), source.offset(e.end_line, e.end_column), e.content) for e in fix.edits]
        if any(start > end for start, end, _ in edits) or _self_overlapping(edits):
            continue
        if any(_clashes(start, end, taken) for start, end, _ in edits):
            continue
        spans.extend(edits)
        for start, end, _ in edits:
            bisect.insort(taken, (start, end))
        applied += 1
    return _rebuild(source.text, spans), applied


def _self_overlapping(edits: list[tuple[int, int, str]]) -> bool:
    """A fix whose own edits overlap is malformed: it is never applied (a fix has a few edits)."""
    return any(_overlaps(a[0], a[1], (b[0], b[1])) for i, a in enumerate(edits) for b in edits[i + 1:])


def _clashes(start: int, end: int, taken: list[tuple[int, int]]) -> bool:
    """Whether (start, end) overlaps a span in `taken`. Taken spans never overlap each other,
    so of those starting before it only the last can, and of the others those starting by its end."""
    here = bisect.bisect_left(taken, (start, -1))
    if here and _overlaps(start, end, taken[here - 1]):
        return True
    while here < len(taken) and taken[here][0] <= end:
        if _overlaps(start, end, taken[here]):
            return True
        here += 1
    return False


def _rebuild(text: str, spans: list[tuple[int, int, str]]) -> str:
    pieces: list[str] = []
    position = 0
    for start, end, content in sorted(spans, key=lambda s: (s[0], s[1])):
        pieces.append(text[position:start])
        pieces.append(content)
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def _overlaps(start: int, end: int, other: tuple[int, int]) -> bool:
    other_start, other_end = other
    if start == end or other_start == other_end:  # insertions clash only at the same point or inside
        return other_start < start < other_end or start < other_start < end or start == other_start
    return start < other_end and other_start < end


def unified_diff(path: str, before: str, after: str, context: int = 3) -> str:
    """`before` -> `after` as a unified diff (the format of `difflib.unified_diff`).

    The lines are aligned on lines that occur once in each text (the rest between them is
    matched by difflib), so a file with thousands of fixes is diffed in linear time.
    """
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    out: list[str] = []
    for group in _AnchoredMatcher(a, b).get_grouped_opcodes(context):
        if not out:
            out += [f"--- {path}\n", f"+++ {path}\n"]
        first, last = group[0], group[-1]
        out.append(f"@@ -{_hunk_range(first[1], last[2])} +{_hunk_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + line for line in a[i1:i2]]
                continue
            out += ["-" + line for line in a[i1:i2]]
            out += ["+" + line for line in b[j1:j2]]
    return "".join(out)


def _hunk_range(start: int, stop: int) -> str:
    """A hunk's line range as unified diffs write it (1-based; an empty range names the line before)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


class _AnchoredMatcher(difflib.SequenceMatcher):
    """Lines unique to both sides, in the same order on both (the longest such chain), are
    matched first; difflib matches the short runs between them. Whole-file difflib is
    quadratic on a file whose many fixed lines look alike."""

    # set by SequenceMatcher at run time; typeshed does not declare them
    a: list[str]
    b: list[str]
    matching_blocks: list[difflib.Match] | None

    def __init__(self, a: list[str], b: list[str]) -> None:
        super().__init__(None, a, b, autojunk=False)

    def get_matching_blocks(self) -> list[difflib.Match]:
        if self.matching_blocks is not None:
            return self.matching_blocks
        a, b = self.a, self.b
        blocks: list[tuple[int, int, int]] = []
        low_a = low_b = 0
        for i, j in [*_unique_common(a, b), (len(a), len(b))]:
            if low_a < i and low_b < j:
                gap = difflib.SequenceMatcher(None, a[low_a:i], b[low_b:j])
                blocks += [(low_a + x, low_b + y, size) for x, y, size in gap.get_matching_blocks() if size]
            if i < len(a):
                blocks.append((i, j, 1))
            low_a, low_b = i + 1, j + 1
        merged: list[tuple[int, int, int]] = []
        for i, j, size in blocks:
            if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
                merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + size)
            else:
                merged.append((i, j, size))
        self.matching_blocks = [difflib.Match(*m) for m in [*merged, (len(a), len(b), 0)]]
        return self.matching_blocks


def _unique_common(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """(i, j) of the lines that occur exactly once in `a` and once in `b`, keeping the longest
    chain increasing on both sides (patience sorting: O(n log n))."""
    once_a, once_b = _positions_of_unique(a), _positions_of_unique(b)
    pairs = sorted((i, once_b[line]) for line, i in once_a.items() if line in once_b)
    tails: list[int] = []  # tails[k]: the smallest j ending a chain of length k + 1
    tail_index: list[int] = []
    previous: list[int] = []
    for index, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_index.append(index)
        else:
            tails[k] = j
            tail_index[k] = index
        previous.append(tail_index[k - 1] if k else -1)
    chain: list[tuple[int, int]] = []
    index = tail_index[-1] if tail_index else -1
    while index >= 0:
        chain.append(pairs[index])
        index = previous[index]
    return chain[::-1]


def _positions_of_unique(lines: list[str]) -> dict[str, int]:
    seen: dict[str, int] = {}
    repeated: set[str] = set()
    for index, line in enumerate(lines):
        if line in seen:
            repeated.add(line)
        seen[line] = index
    return {line: index for line, index in seen.items() if line not in repeated}
