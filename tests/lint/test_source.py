"""Source positions stay linear in the size of a file: the line table is built once per file,
however many findings or fixes point into it (counted in operations, never in seconds)."""

from __future__ import annotations

import difflib
import random
import re

import pytest

from torchdoctor.core.finding import Edit, Fix
from torchdoctor.linter import fixes
from torchdoctor.linter import source as source_module
from torchdoctor.linter.engine import Engine
from torchdoctor.linter.fixes import apply_fixes
from torchdoctor.linter.source import Source

#: one function with two findings, TD150 (softmax without dim) and TD101 (softmax into cross_entropy),
#: both of which quote source text (`ctx.text`) in their message
UNIT = '''
def f{i}(x, y, logits):
    a = F.softmax(x)
    probs = F.softmax(logits, dim=-1)
    b = F.cross_entropy(probs.view(-1, 3), y)
    return a, b
'''


def many_findings(units: int) -> str:
    return "import torch\nimport torch.nn.functional as F\n" + "".join(UNIT.format(i=i) for i in range(units))


class CountingPattern:
    """Stands in for the newline pattern and counts the characters it is asked to scan."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.scanned = 0

    def __getattr__(self, name: str):  # finditer, split, search, ...: every scan goes through here
        method = getattr(self.pattern, name)

        def counted(text: str, *args, **kwargs):
            self.scanned += len(text)
            return method(text, *args, **kwargs)

        return counted


def test_many_findings_in_one_file_scan_its_lines_once(monkeypatch: pytest.MonkeyPatch) -> None:
    text = many_findings(300)
    counter = CountingPattern(source_module._NEWLINE)
    monkeypatch.setattr(source_module, "_NEWLINE", counter)
    result = Engine({"TD101", "TD150"}).lint(Source("big.py", text))
    assert len(result.findings) == 600
    assert len(text) <= counter.scanned <= 2 * len(text)  # once (not once per quoted segment: 1200 times)


def test_segments_and_lines_are_read_from_one_table() -> None:
    source = Source("x.py", "a = 1\r\nbb = (2,\r    3)\nc = 'é'\n")
    assert [source.line(n) for n in range(0, 6)] == ["", "a = 1", "bb = (2,", "    3)", "c = 'é'", ""]
    assert source.offset(3, 4) == source.text.index("3)")
    tree = __import__("ast").parse(source.text)
    assert source.segment(tree.body[1].value) == "(2,\r    3)"  # type: ignore[attr-defined]


def test_many_fixes_compare_each_edit_with_its_neighbours_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a fix overlaps one taken before is asked of the taken spans next to it, not of all."""
    count = 2000
    text = "".join(f"x{i} = {i}\n" for i in range(count))
    source = Source("x.py", text)
    calls = 0
    overlaps = fixes._overlaps

    def counted(*args):
        nonlocal calls
        calls += 1
        return overlaps(*args)

    monkeypatch.setattr(fixes, "_overlaps", counted)
    edits = [Fix(f"f{i}", (Edit(i + 1, 0, i + 1, 1, "y"),)) for i in range(count)]
    random.Random(0).shuffle(edits)
    edits.append(Fix("clash", (Edit(5, 0, 5, 2, "z"),)))  # overlaps the fix of line 5, given before it: waits
    fixed, applied = apply_fixes(source, edits)
    assert applied == count
    assert fixed == text.replace("x", "y")
    assert calls <= 4 * (count + 1)  # a constant number per edit, not one per edit taken before (~2,000,000)


def naive_apply(source: Source, given: list[Fix]) -> tuple[str, int]:
    """The rule `apply_fixes` keeps, written plainly: every edit against every span taken before."""
    taken: list[tuple[int, int]] = []
    spans: list[tuple[int, int, str]] = []
    applied = 0
    for fix in sorted(given, key=lambda f: min((e.line, e.column) for e in f.edits)):
        edits = [(source.offset(e.line, e.column), source.offset(e.end_line, e.end_column), e.content) for e in fix.edits]
        own = [(s, e) for s, e, _ in edits]
        if any(s > e for s, e in own) or any(fixes._overlaps(*a, b) for i, a in enumerate(own) for b in own[i + 1:]):
            continue
        if any(fixes._overlaps(s, e, other) for s, e in own for other in taken):
            continue
        taken.extend(own)
        spans.extend(edits)
        applied += 1
    text = source.text
    for s, e, content in sorted(spans, reverse=True):
        text = text[:s] + content + text[e:]
    return text, applied


@pytest.mark.parametrize("seed", range(40))
def test_fixes_taken_are_those_the_plain_rule_takes(seed: int) -> None:
    rng = random.Random(seed)
    source = Source("x.py", "".join(f"line{i} = {i}\n" for i in range(6)))
    given = []
    for n in range(rng.randint(1, 12)):
        edits = []
        for _ in range(rng.choice((1, 1, 2))):
            line = rng.randint(1, 6)
            start = rng.randint(0, 8)
            end = start if rng.random() < 0.3 else start + rng.randint(1, 4)
            edits.append(Edit(line, start, line, end, f"<{n}>"))
        given.append(Fix(f"f{n}", tuple(edits)))
    assert apply_fixes(source, given) == naive_apply(source, given)


def test_diff_of_many_fixes_matches_runs_between_unique_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """difflib's longest-match search is asked about short runs, not the whole file again and again."""
    before = "".join(f"def f{i}(model):\n    scaler = GradScaler()\n    p.require_grad = False\n" for i in range(1500))
    after = before.replace("require_grad", "requires_grad").replace("GradScaler()", "torch.amp.GradScaler('cuda')")
    searched = 0
    search = difflib.SequenceMatcher.find_longest_match

    def counted(self, alo=0, ahi=None, blo=0, bhi=None):
        nonlocal searched
        searched += (ahi if ahi is not None else len(self.a)) - alo
        return search(self, alo, ahi, blo, bhi)

    monkeypatch.setattr(difflib.SequenceMatcher, "find_longest_match", counted)
    diff = fixes.unified_diff("x.py", before, after)
    lines = before.count("\n")
    assert searched <= 4 * lines  # whole-file difflib: ~1,000 times the file
    assert diff.count("\n-    p.require_grad") == diff.count("\n+    p.requires_grad") == 1500


@pytest.mark.parametrize("before, after", [
    ("a\nb\nc\n", "a\nB\nc\n"),
    ("x\n" * 20 + "y\n" + "x\n" * 20, "x\n" * 20 + "z\n" + "x\n" * 21),
    ("one\ntwo\n", "one\ntwo"),
    ("", "new\n"),
    ("same\n", "same\n"),
    ("".join(f"line {i}\n" for i in range(30)), "".join(f"line {i}\n" for i in range(30) if i % 7) + "end\n"),
])
def test_diff_reads_as_difflib_writes_it(before: str, after: str) -> None:
    expected = "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                            fromfile="x.py", tofile="x.py"))
    assert fixes.unified_diff("x.py", before, after) == expected
