"""A rule owns all its prose: detectors pick a rule's `Variant` instead of passing wording."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.registry import all_rules
from torchdoctor.core.rule import Rule, Variant, template_fields

SOURCE = Path(__file__).resolve().parents[2] / "src" / "torchdoctor"

#: `message=` / `hint=` given a local name or a local helper's result outside the rules (wording
#: made in a variable or a function), each with why it is not prose the module makes
PASSED_ON: dict[str, str] = {
    "renderers/junit.py": "`message=` of a JUnit <skipped> element is the test case's name, not a finding",
    "observe/detectors/memory_leaks.py": "amends a finding TD147/TD148 already made with TD440's MEASURED template "
    "(rules/memory/memory_leak.py), picked by the kind of leak and filled with numbers",
    "run/stalled_ranks.py": "appends TD497's HOLDS_BACK template (rules/performance/training_stalled.py), picked by how "
    "many ranks wait and where, to the finding of the rank behind",
}

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


def test_variants_compose_each_setting_its_own_part() -> None:
    rule = _rule(cause=Variant(message="{what} went wrong ({why})"), groups=Variant(hint="Group {what}."),
                 both=Variant(message="x", hint="y"))
    composed = rule.finding(fields={"what": "a", "why": "b"}, variant=("cause", "groups"))
    assert (composed.message, composed.hint) == ("a went wrong (b)", "Group a.")
    assert rule.finding(fields={"what": "a", "why": "b"}, variant=("cause",)).hint == "Fix a."
    with pytest.raises(ValueError, match=r"TD999 \(made-up\): variants .* set the same part twice"):
        rule.finding(fields={"what": "a", "why": "b"}, variant=("cause", "both"))


def test_an_unknown_variant_raises_naming_the_rule() -> None:
    with pytest.raises(ValueError, match=r"TD999 \(made-up\): no variant 'other'"):
        _rule(said=Variant(message="x")).finding(fields={"what": "a"}, variant="other")


def test_the_fields_must_fill_the_variants_templates() -> None:
    rule = _rule(both=Variant(message="{what} twice", hint="Fix {what} {where}."))
    with pytest.raises(TypeError, match=r"TD999 .*missing \['where'\]"):
        rule.finding(fields={"what": "a"}, variant="both")
    with pytest.raises(TypeError, match=r"TD999 .*unknown \['where'\]"):
        rule.finding(fields={"what": "a", "where": "here"})


def test_a_variant_is_named_in_kebab_case_and_says_something() -> None:
    with pytest.raises(ValueError, match="TD999: variants"):
        _rule(Manual=Variant(message="x"))
    with pytest.raises(ValueError, match="TD999: variants"):
        _rule(empty=Variant())


def test_every_variants_templates_parse() -> None:
    """A stray brace in a variant raises here, not in the run that first picks the variant."""
    for rule in all_rules():
        for name in rule.variants:
            for template in rule.templates(name):
                template_fields(template)


def test_variants_leave_the_rule_hashable_and_equal() -> None:
    assert _rule(said=Variant(message="x")) == _rule() and hash(_rule(said=Variant(message="x"))) == hash(_rule())


# -- no wording outside the rules ----------------------------------------------------------------

def _is_text(node: ast.expr) -> bool:
    """A literal, an f-string, or text made from a literal (`"..." % x`, `"...".format(x)`, `"a" + x`)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.Add)):
        return _is_text(node.left) or (isinstance(node.op, ast.Add) and _is_text(node.right))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _is_text(node.func.value)
    if isinstance(node, ast.IfExp):
        return _is_text(node.body) or _is_text(node.orelse)
    return False


def _worded_calls() -> Iterator[tuple[str, str]]:
    """(module, place) of each call outside the rules that passes `message=` or `hint=` as text."""
    for path in sorted(SOURCE.rglob("*.py")):
        module = path.relative_to(SOURCE).as_posix()
        if module.startswith("rules/") or module == "core/rule.py":
            continue
        for call in ast.walk(ast.parse(path.read_text())):
            if isinstance(call, ast.Call):
                for keyword in call.keywords:
                    if keyword.arg in ("message", "hint") and _is_text(keyword.value):
                        yield module, f"{module}:{keyword.value.lineno} {keyword.arg}="


def test_no_wording_outside_the_rules() -> None:
    found = list(_worded_calls())
    wrong = [place for _, place in found]
    assert not wrong, "give the rule a Variant and pass variant= instead:\n" + "\n".join(wrong)


def _passed_on(node: ast.expr, helpers: set[str]) -> bool:
    """A local name, a call of a function the module defines, or text joined from them
    (`finding.message + added`): wording made elsewhere in the module, not a rule's Variant."""
    if isinstance(node, ast.Name):
        return node.id != "None"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in helpers
    if isinstance(node, ast.BinOp):
        return _passed_on(node.left, helpers) or _passed_on(node.right, helpers)
    if isinstance(node, ast.IfExp):
        return _passed_on(node.body, helpers) or _passed_on(node.orelse, helpers)
    return False


def _passing_calls() -> Iterator[tuple[str, str]]:
    """(module, place) of each call outside the rules that passes `message=` or `hint=` as a
    local name or a local helper's result."""
    for path in sorted(SOURCE.rglob("*.py")):
        module = path.relative_to(SOURCE).as_posix()
        if module.startswith("rules/") or module == "core/rule.py":
            continue
        tree = ast.parse(path.read_text())
        helpers = {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for call in ast.walk(tree):
            if isinstance(call, ast.Call):
                for keyword in call.keywords:
                    if keyword.arg in ("message", "hint") and _passed_on(keyword.value, helpers):
                        yield module, f"{module}:{keyword.value.lineno} {keyword.arg}={ast.unparse(keyword.value)}"


def test_no_wording_made_in_a_variable_or_a_helper() -> None:
    found = list(_passing_calls())
    wrong = [place for module, place in found if module not in PASSED_ON]
    assert not wrong, "give the rule a Variant and pass variant= and facts instead:\n" + "\n".join(wrong)
    assert not set(PASSED_ON) - {module for module, _ in found}, "a listed module no longer passes wording: unlist it"



#: modules that hold a finding's `message`/`hint` under those keys, each with why it words nothing
SERIALISED: dict[str, str] = {
    "core/finding.py": "Finding.to_dict: the contract's JSON object of a finding already made",
    "renderers/sarif.py": "a SARIF result's `message` is the finding's own text, written out",
}


def _keyed_wording() -> Iterator[str]:
    """`x["message"] = ...` and `{"message": ...}` (or `"hint"`) outside the rules: wording handed
    to a finding through a dict and `**` instead of a keyword."""
    for path in sorted(SOURCE.rglob("*.py")):
        module = path.relative_to(SOURCE).as_posix()
        if module.startswith("rules/") or module == "core/rule.py" or module in SERIALISED:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            keys: list[ast.expr | None] = []
            if isinstance(node, ast.Assign):
                keys = [target.slice for target in node.targets if isinstance(target, ast.Subscript)]
            elif isinstance(node, ast.Dict):
                keys = list(node.keys)
            if any(isinstance(key, ast.Constant) and key.value in ("message", "hint") for key in keys):
                yield f"{module}:{node.lineno}"


def test_no_wording_handed_over_in_a_dict() -> None:
    found = list(_keyed_wording())
    assert not found, "give the rule a Variant and pass variant= instead:\n" + "\n".join(found)
