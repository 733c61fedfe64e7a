"""Building a finding from a rule and the fields a detector or an explainer gives.

Template fields are formatted here rather than by `Rule.finding`, because some templates use
names (`count`) that are also parameters of a finding; those must fill the message, not the
finding's own count.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.core.finding import Finding
from torchdoctor.core.rule import Rule
from torchdoctor.run.events import Location

#: keyword arguments that are the finding's own, not template fields
FINDING_ARGUMENTS = frozenset({"severity", "evidence", "message", "hint", "rank", "column", "end_line", "end_column", "fix"})


def build(rule: Rule, location: Location | None, fields: dict[str, Any]) -> Finding:
    own = {k: v for k, v in fields.items() if k in FINDING_ARGUMENTS}
    template = {k: v for k, v in fields.items() if k not in FINDING_ARGUMENTS}
    if own.get("message") is None:  # a template is filled only when no text is given
        own["message"] = rule.message.format(**template)
    if own.get("hint") is None:
        own["hint"] = rule.hint.format(**template)
    file, line = location if location else (None, None)
    return rule.finding(file=file, line=line, **own)
