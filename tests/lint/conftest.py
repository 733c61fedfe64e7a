"""Helpers for the lint tests: lint a snippet or a file and read back what was found."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from torchdoctor.core.config import Config
from torchdoctor.core.finding import Finding
from torchdoctor.linter.runner import Options, lint_paths

FIXTURES = Path(__file__).parent / "fixtures"
CLEAN = Path(__file__).parent / "clean"
#: `# expect: TD110`, `# expect: TD110, TD111`; a code may pin a fragment of its message: `TD110 "never reset"`
_MARK = r'TD\d{3}(?:\s+"[^"]*")?'
EXPECT = re.compile(rf"#\s*expect:\s*(?P<codes>{_MARK}(?:\s*,\s*{_MARK})*)")
PINNED = re.compile(r'(?P<code>TD\d{3})(?:\s+"(?P<fragment>[^"]*)")?')


def lint_file(path: Path, config: Config | None = None, **options: object) -> list[Finding]:
    return lint_paths([str(path)], config or Config(), Options(**options)).report.findings  # type: ignore[arg-type]


def expected(path: Path) -> set[tuple[int, str]]:
    """`(line, code)` for every `# expect: TD123` marker in a fixture: in a comment, not in a
    string or docstring that explains the markers."""
    return set(markers(path))


def markers(path: Path) -> dict[tuple[int, str], str | None]:
    """Every marker's `(line, code)` and the fragment of the message it pins (None: no pin), so
    the words a user reads are under test where a fixture says them."""
    found: dict[tuple[int, str], str | None] = {}
    for token in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        match = EXPECT.search(token.string) if token.type == tokenize.COMMENT else None
        for mark in PINNED.finditer(match.group("codes") if match else ""):
            found[(token.start[0], mark["code"])] = mark["fragment"]
    return found


@pytest.fixture
def lint_source(tmp_path: Path):
    """Write a snippet to a file and lint it: `lint_source(code, name="x.py") -> findings`."""

    def run(source: str, name: str = "snippet.py", config: Config | None = None, **options: object) -> list[Finding]:
        path = tmp_path / name
        path.write_text(source, encoding="utf-8")
        return lint_file(path, config, **options)

    return run
