"""Building a finding from a rule, the user's line, and what a detector or an explainer gives."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchdoctor.core.finding import Finding
from torchdoctor.core.rule import Rule
from torchdoctor.observe.events import Location


def build(rule: Rule, location: Location | None, fields: Mapping[str, Any], own: Mapping[str, Any] | None = None) -> Finding:
    """`fields` fill the templates of the rule (or of its `variant`); `own` are the finding's own
    arguments (`variant=`, `severity=`, `evidence=`, `rank=`)."""
    file, line = location if location else (None, None)
    return rule.finding(fields=fields, file=file, line=line, **(own or {}))
