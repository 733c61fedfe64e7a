"""Building a finding from a rule and the keyword arguments a detector or an explainer gives.

`Session.report` and the crash explainers take one mapping that holds both the rule's template
fields and the finding's own arguments (`message=`, `hint=`, `evidence=`...); this is the one
place that splits them, so that a template field named like a finding argument (`count`) fills
the message rather than the finding's own count.
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
    file, line = location if location else (None, None)
    return rule.finding(fields=template, file=file, line=line, **own)
