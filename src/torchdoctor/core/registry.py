"""The one rule registry: every module under `torchdoctor.rules` that defines `RULE`, and
every module a `torchdoctor.rules` plugin names (core/plugins.py).

Rules are found by walking the package, so adding a rule is adding one file.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from torchdoctor.core import plugins
from torchdoctor.core.errors import UsageError
from torchdoctor.core.finding import Category
from torchdoctor.core.rule import Rule


@functools.lru_cache(maxsize=1)
def all_rules() -> tuple[Rule, ...]:
    """Every rule, sorted by code; raises if two rules share a code or a name."""
    found = plugins.rules()
    _check_unique(found)
    return tuple(sorted(found, key=lambda r: r.code))


def _check_unique(rules: Iterable[Rule]) -> None:
    codes: dict[str, Rule] = {}
    names: dict[str, Rule] = {}
    for rule in rules:
        for key, seen in ((rule.code, codes), (rule.name, names)):
            if key in seen:
                raise RuntimeError(f"two rules share {key!r}: {seen[key].code} and {rule.code}")
            seen[key] = rule


def get(code_or_name: str) -> Rule:
    """The rule with this code (any case) or name; UsageError naming close matches otherwise."""
    key = code_or_name.strip()
    for rule in all_rules():
        if key.upper() == rule.code or key == rule.name:
            return rule
    raise UsageError(f"no rule {code_or_name!r}; `torchdoctor rules` lists them all")


def matches(rule: Rule, selector: str) -> bool:
    """A selector is `ALL`, a code or code prefix (`TD1`), a rule name, or a category."""
    selector = selector.strip()
    if selector.upper() == "ALL":
        return True
    if selector.upper().startswith("TD"):
        return rule.code.startswith(selector.upper())
    return selector in (rule.name, rule.category.value)


def validate_selectors(selectors: Iterable[str]) -> None:
    """Reject selectors that match no rule, so a typo does not silently select nothing."""
    categories = {c.value for c in Category}
    for selector in selectors:
        if selector in categories or selector.upper() == "ALL":
            continue
        if not any(matches(rule, selector) for rule in all_rules()):
            raise UsageError(
                f"unknown rule selector {selector!r}: use a code (TD101), a code prefix (TD1), "
                "a rule name or a category"
            )
