"""The per-command tables and counts in the docs follow the source (catalog/reporters.py), so
a rule added to a command without its line in the docs fails here."""

from __future__ import annotations

import re
from pathlib import Path

from torchdoctor.catalog.reporters import commands_of
from torchdoctor.core import registry
from torchdoctor.health.runner import CHECKS

ROOT = Path(__file__).resolve().parents[2]


def codes_in_table(doc: str) -> set[str]:
    text = (ROOT / doc).read_text(encoding="utf-8")
    return {code for row in re.findall(r"^\| \[?(TD\d{3}[^|]*)\|", text, re.M) for code in re.findall(r"TD\d{3}", row)}


def reported_by(command: str) -> set[str]:
    return {rule.code for rule in registry.all_rules() if command in commands_of(rule.code)}


def test_lint_docs_table_lists_exactly_the_rules_lint_reports() -> None:
    assert codes_in_table("docs/lint.md") == reported_by("lint")


def test_run_docs_tables_list_only_rules_run_reports() -> None:
    for doc in ("docs/run.md", "docs/run-detectors.md"):
        assert codes_in_table(doc) - reported_by("run") == set(), doc


def test_readme_counts() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # TD000-TD099 are the tool's own codes (a file lint cannot read or parse, CONTRIBUTING.md), not rules
    lint = len({code for code in reported_by("lint") if code >= "TD100"})
    assert f"static analysis: {lint} rules" in readme
    assert f"\n{lint} rules have a lint detector" in (ROOT / "docs" / "lint.md").read_text(encoding="utf-8")
    assert f"{len(registry.all_rules())} rules, each with a stable code" in readme
    assert f"{len(CHECKS)} checks on a private copy" in readme
