"""Every rule is documented completely, and its doc's example is proven.

The "Example" code must trigger the rule and the "Use instead" code must not. Which command
proves it is the rule's `proof`: each kind has a harness in tests/rules/proofs/<kind>.py with
`triggered(source: str, folder: Path, rule: Rule) -> set[str]`, the rule codes the command reports.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from torchdoctor.core import registry
from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import REQUIRED_SECTIONS, Rule

RULES = registry.all_rules()


def test_there_are_rules() -> None:
    assert len(RULES) >= 20


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_doc_is_complete(rule: Rule) -> None:
    sections = rule.sections
    for heading in REQUIRED_SECTIONS:
        assert sections.get(heading, "").strip(), f"{rule.code}: doc lacks '## {heading}'"
    assert rule.example, f"{rule.code}: '## Example' has no code block"
    assert rule.use_instead, f"{rule.code}: '## Example' has no code block after 'Use instead:'"
    assert rule.example != rule.use_instead
    assert rule.message.strip() and rule.hint.strip()
    assert isinstance(rule.category, Category) and isinstance(rule.severity, Severity)
    if rule.fixable:
        assert "Fix safety" in sections or rule.proof == "lint", f"{rule.code}: say why its fix is safe"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_example_triggers_and_use_instead_does_not(rule: Rule, tmp_path: Path) -> None:
    harness = importlib.import_module(f"tests.rules.proofs.{rule.proof}")
    bad = harness.triggered(rule.example, tmp_path / "example", rule)
    assert rule.code in bad, f"{rule.code}: its doc's Example does not trigger it (got {sorted(bad)})"
    good = harness.triggered(rule.use_instead, tmp_path / "use_instead", rule)
    assert rule.code not in good, f"{rule.code}: its doc's 'Use instead' code triggers it"
