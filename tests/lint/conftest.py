"""Helpers for the lint tests: lint a snippet or a file and read back what was found."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from torchdoctor.core.config import Config
from torchdoctor.core.finding import Finding
from torchdoctor.lint.runner import Options, lint_paths

FIXTURES = Path(__file__).parent / "fixtures"
CLEAN = Path(__file__).parent / "clean"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>TD\d{3}(?:\s*,\s*TD\d{3})*)")


def lint_file(path: Path, config: Config | None = None, **options: object) -> list[Finding]:
    return lint_paths([str(path)], config or Config(), Options(**options)).report.findings  # type: ignore[arg-type]


def expected(path: Path) -> set[tuple[int, str]]:
    """`(line, code)` for every `# expect: TD123` marker in a fixture: in a comment, not in a
    string or docstring that explains the markers."""
    found = set()
    for token in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        match = EXPECT.search(token.string) if token.type == tokenize.COMMENT else None
        if match:
            found.update((token.start[0], code.strip()) for code in match.group("codes").split(","))
    return found


@pytest.fixture
def lint_source(tmp_path: Path):
    """Write a snippet to a file and lint it: `lint_source(code, name="x.py") -> findings`."""

    def run(source: str, name: str = "snippet.py", config: Config | None = None, **options: object) -> list[Finding]:
        path = tmp_path / name
        path.write_text(source, encoding="utf-8")
        return lint_file(path, config, **options)

    return run
