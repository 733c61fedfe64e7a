"""A rule owns all its prose: detectors pick a rule's `Variant` instead of passing wording."""

from __future__ import annotations

import pytest

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant


def _rule(**variants: Variant) -> Rule:
    return Rule(code="TD999", name="made-up", category=Category.NUMERICS, severity=Severity.ERROR,
                message="{what} went wrong", hint="Fix {what}.", doc="## What it does\nx\n", proof="run",
                variants=variants)


def test_a_variant_replaces_the_templates_it_sets() -> None:
    rule = _rule(both=Variant(message="{what} twice", hint="Fix {what} {where}."), said=Variant(message="{what} said"))
    both = rule.finding(fields={"what": "a", "where": "here"}, variant="both")
    assert (both.message, both.hint) == ("a twice", "Fix a here.")
    said = rule.finding(fields={"what": "a"}, variant="said")
    assert (said.message, said.hint) == ("a said", "Fix a.")
    plain = rule.finding(fields={"what": "a"})
    assert (plain.message, plain.hint) == ("a went wrong", "Fix a.")


def test_an_unknown_variant_raises_naming_the_rule() -> None:
    with pytest.raises(ValueError, match=r"TD999 \(made-up\): no variant 'other'"):
        _rule(said=Variant(message="x")).finding(fields={"what": "a"}, variant="other")


def test_the_fields_must_fill_the_variants_templates() -> None:
    rule = _rule(both=Variant(message="{what} twice", hint="Fix {what} {where}."))
    with pytest.raises(TypeError, match=r"TD999 .*missing \['where'\]"):
        rule.finding(fields={"what": "a"}, variant="both")
    with pytest.raises(TypeError, match=r"TD999 .*unknown \['where'\]"):
        rule.finding(fields={"what": "a", "where": "here"})


def test_variants_leave_the_rule_hashable_and_equal() -> None:
    assert _rule(said=Variant(message="x")) == _rule() and hash(_rule(said=Variant(message="x"))) == hash(_rule())
