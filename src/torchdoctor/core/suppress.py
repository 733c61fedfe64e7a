"""Line comments that silence a finding: `# noqa: TD123` and `# torchdoctor: ignore[TD123]`.

A bare `# noqa` or `# torchdoctor: ignore` silences every rule on that line. Rules may be named
by code or by name, separated by commas.
"""

from __future__ import annotations

import functools
import linecache
import re
from collections.abc import Callable, Iterable

from torchdoctor.core.finding import Finding

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[\w\-]+(?:\s*,\s*[\w\-]+)*))?", re.I)
_IGNORE = re.compile(r"#\s*torchdoctor:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)


@functools.lru_cache(maxsize=4096)
def suppressed_rules(line: str) -> frozenset[str] | None:
    """The rules a source line silences: None for none, an empty set for all of them."""
    if "#" not in line:
        return None
    codes: set[str] = set()
    found = False
    for pattern in (_NOQA, _IGNORE):
        for match in pattern.finditer(line):
            found = True
            listed = match.group("codes")
            if not listed:
                return frozenset()
            codes.update(c.strip().upper() if c.strip().upper().startswith("TD") else c.strip()
                         for c in listed.split(",") if c.strip())
    return frozenset(codes) if found else None


def is_suppressed(finding: Finding, line: str) -> bool:
    rules = suppressed_rules(line)
    if rules is None:
        return False
    return not rules or finding.rule in rules or finding.name in rules


def drop_suppressed(
    findings: Iterable[Finding], read_line: Callable[[str, int], str] | None = None
) -> list[Finding]:
    """Findings whose own source line does not silence them (files read through linecache)."""
    read = read_line or linecache.getline
    return [
        f for f in findings
        if f.file is None or f.line is None or not is_suppressed(f, read(f.file, f.line))
    ]
