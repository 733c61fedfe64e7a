"""docs/rules.md, as `torchdoctor rules --format markdown` writes it (tests/dev/test_generate.py
checks that the checkout's copy is what it writes)."""

from torchdoctor.catalog.rules_command import as_markdown
from torchdoctor.core import registry


def test_every_rule_has_an_anchor_and_a_section() -> None:
    text = as_markdown(list(registry.all_rules()))
    for rule in registry.all_rules():
        assert f"[{rule.code}](#{rule.code.lower()})" in text
        assert f"\n## {rule.code}\n" in text
