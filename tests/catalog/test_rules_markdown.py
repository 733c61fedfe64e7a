"""docs/rules.md is generated from the registry and must not drift from it."""

from pathlib import Path

from torchdoctor.catalog.rules_command import as_markdown
from torchdoctor.core import registry

RULES_MD = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def test_docs_rules_md_is_up_to_date() -> None:
    expected = as_markdown(list(registry.all_rules()))
    assert RULES_MD.read_text(encoding="utf-8") == expected, (
        "docs/rules.md is stale: regenerate it with `torchdoctor rules --format markdown > docs/rules.md`"
    )


def test_every_rule_has_an_anchor_and_a_section() -> None:
    text = as_markdown(list(registry.all_rules()))
    for rule in registry.all_rules():
        assert f"[{rule.code}](#{rule.code.lower()})" in text
        assert f"\n## {rule.code}\n" in text
