"""Proof harness for `proof="lint"` rules: the example is a Python file; lint it with all rules."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.core.config import Config
from torchdoctor.core.rule import Rule
from torchdoctor.linter.runner import Options, lint_paths


def triggered(source: str, folder: Path, rule: Rule) -> set[str]:
    """Write `source` to a file in `folder`, lint it with every rule, return the codes found."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "example.py"
    path.write_text(source, encoding="utf-8")
    outcome = lint_paths([str(path)], Config(), Options())
    return {finding.rule for finding in outcome.report.findings}
