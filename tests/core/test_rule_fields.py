"""`Rule.finding` keeps template fields apart from the finding's own arguments and checks them."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchdoctor.core.registry import get
from torchdoctor.core.rule import Rule, template_fields

SOURCE = Path(__file__).resolve().parents[2] / "src" / "torchdoctor"
#: helpers that pass their keyword arguments on to `Session.report` or `Rule.finding` (rule first)
WRAPPERS = {"_finding", "_report"}
#: their keyword arguments that are the finding's own
OWN = {"severity", "evidence", "message", "hint", "variant"}


def test_template_fields_names_each_placeholder_once() -> None:
    assert template_fields("{a} and {b.c} or {d[0]} at {e:>4}, {{literal}}") == {"a", "b", "d", "e"}


def test_a_field_named_like_a_finding_argument_fills_the_template() -> None:
    rule = get("TD463")  # its message counts the unused parameters: `{count}`
    assert "count" in rule.placeholders
    finding = rule.finding(fields={"count": "3", "names": "a, b, c"})
    assert "3" in finding.message and finding.count == 1


def test_an_unknown_field_raises_with_the_rule_code() -> None:
    with pytest.raises(TypeError, match=r"TD101 .*unknown \['sorce'\].*missing \['source'\]"):
        get("TD101").finding(fields={"sorce": "softmax"})


def test_a_missing_field_raises_unless_its_template_is_replaced() -> None:
    with pytest.raises(TypeError, match=r"TD101 .*missing \['source'\]"):
        get("TD101").finding(file="m.py", line=1)
    finding = get("TD101").finding(message="said otherwise")
    assert finding.message == "said otherwise"


def test_finding_arguments_are_not_template_fields() -> None:
    with pytest.raises(TypeError):
        get("TD101").finding(source="x")  # type: ignore[call-arg]


# -- every call site in the package: the fields it names fill its rule's templates exactly --

def _rule_of(node: ast.expr, module: object) -> Rule | None:
    if isinstance(node, ast.Name):
        value = getattr(module, node.id, None)
        return value if isinstance(value, Rule) else None
    return None


def _literal_keys(node: ast.expr) -> set[str] | None:
    if isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys):
        return {k.value for k in node.keys}  # type: ignore[union-attr]
    return None


def _call_sites() -> Iterator[tuple[str, Rule, set[str], set[str], str | None]]:
    """(place, rule, template fields named, finding arguments named, variant named) for each call whose rule and fields are
    written out: `RULE.finding(fields={...})`, lint's `ctx.report(RULE, node, fields={...})`, run's
    `self.ctx.report(RULE, ..., fields={...})`, a crash explainer's `Explanation(RULE, {...})` and the
    helpers that pass keywords on."""
    for path in sorted(SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        name = ".".join(path.relative_to(SOURCE.parent).with_suffix("").parts).removesuffix(".__init__")
        module = None
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call):
                continue
            if isinstance(call.func, ast.Name):
                method, receiver = call.func.id, ""
            elif isinstance(call.func, ast.Attribute):
                method, receiver = call.func.attr, ast.unparse(call.func.value)
            else:
                continue
            keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
            if method == "Explanation" and len(call.args) > 1:  # a crash explainer's (rule, fields, hint=...)
                rule_node = call.args[0]
                fields = _literal_keys(call.args[1])
                own = set(keywords)
            elif method == "_at" and len(call.args) > 3:  # observe/crash/explain.py: (rule, crash, frame, fields)
                rule_node = call.args[0]
                fields, own = _literal_keys(call.args[3]), set()
            elif method in WRAPPERS and call.args and not any(k.arg is None for k in call.keywords):
                rule_node = call.args[0]
                named = set(keywords)
                if "fields" in keywords:  # a wrapper shaped as `Rule.finding` (trace/diagnose.py)
                    fields, own = _literal_keys(keywords["fields"]), named - {"fields"}
                else:
                    fields, own = named - OWN, named & OWN
            elif method == "finding" or (method == "report" and receiver in ("ctx", "self.ctx") and call.args):
                rule_node = call.func.value if method == "finding" else call.args[0]
                fields = _literal_keys(keywords["fields"]) if "fields" in keywords else set()
                own = set(keywords) - {"fields"}
            else:
                continue
            if fields is None or any(k.arg is None and method != "finding" for k in call.keywords):
                continue
            module = module or importlib.import_module(name)
            rule = _rule_of(rule_node, module)
            variant = keywords.get("variant")
            if rule is not None and (variant is None or isinstance(variant, ast.Constant)):
                yield (f"{path.relative_to(SOURCE)}:{call.lineno}", rule, fields, own,
                       variant.value if isinstance(variant, ast.Constant) else None)


def test_every_written_out_call_fills_its_rules_templates_exactly() -> None:
    sites = list(_call_sites())
    assert len(sites) > 150  # the walk finds the package's call sites
    wrong = []
    for place, rule, fields, own, variant in sites:
        try:
            rule.check_fields(dict.fromkeys(fields), message="message" not in own, hint="hint" not in own,
                              variant=variant)
        except (TypeError, ValueError) as error:
            wrong.append(f"{place}: {error}")
    assert not wrong, "\n".join(wrong)
