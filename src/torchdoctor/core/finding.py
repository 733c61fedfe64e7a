"""The finding model: one problem, at one place in the user's code, with its cause and fix."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field, replace
from typing import Any


class Severity(str, enum.Enum):
    """How sure we are that the program is wrong (values are the contract's strings)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Higher is more severe; used for sorting and `--fail-on`."""
        return {"error": 3, "warning": 2, "info": 1}[self.value]

    @property
    def icon(self) -> str:
        return {"error": "❌", "warning": "⚠️", "info": "ℹ️"}[self.value]

    def __str__(self) -> str:
        return self.value


class Category(str, enum.Enum):
    """What kind of thing goes wrong; every rule belongs to exactly one (the contract's list)."""

    DEVICE = "device"
    DTYPE = "dtype"
    GRAD_FLOW = "grad-flow"
    GRAD_MODE = "grad-mode"
    OPTIMIZER = "optimizer"
    LOSS = "loss"
    MODE = "mode"
    DATA = "data"
    NUMERICS = "numerics"
    MEMORY = "memory"
    DISTRIBUTED = "distributed"
    COMPILE = "compile"
    ENV = "env"
    PERFORMANCE = "performance"
    REPRODUCIBILITY = "reproducibility"  # the contract's category (CONTRACT.md): no rule yet, `--ignore reproducibility` still valid
    API = "api"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Edit:
    """Replace the source between two (line, column) positions with `content` ("" deletes).

    Lines are 1-based and columns 0-based, as in `ast` nodes.
    """

    line: int
    column: int
    end_line: int
    end_column: int
    content: str


@dataclass(frozen=True)
class Fix:
    """A fix is data: a title, the edits, and whether `--fix` may apply it without asking."""

    title: str
    edits: tuple[Edit, ...]
    safe: bool = True


@dataclass(frozen=True)
class Finding:
    """One problem. `file`/`line` point at the line a person should change (None only for
    findings that involve no source line, such as an environment verdict)."""

    rule: str
    name: str
    category: Category
    severity: Severity
    message: str
    hint: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    evidence: dict[str, Any] | None = None
    count: int = 1
    rank: int | None = None
    fix: Fix | None = field(default=None, compare=False)

    def with_severity(self, severity: Severity) -> Finding:
        return replace(self, severity=severity)

    @property
    def location(self) -> str:
        """`file:line:col` as far as it is known, or "" when no source line is involved."""
        if self.file is None:
            return ""
        parts = [self.file]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column + 1))
        return ":".join(parts)

    def sort_key(self) -> tuple[Any, ...]:
        return (self.file or "", self.line or 0, self.column or 0, self.rule, self.message)

    def to_dict(self) -> dict[str, Any]:
        """The contract's JSON object; optional fields are left out when empty."""
        data: dict[str, Any] = {
            "rule": self.rule,
            "name": self.name,
            "category": self.category.value,
            "severity": self.severity.value,
            "message": self.message,
            "hint": self.hint,
            "file": self.file,
            "line": self.line,
        }
        for key in ("column", "end_line", "end_column", "rank"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value + 1 if key in ("column", "end_column") else value
        if self.count != 1:
            data["count"] = self.count
        if self.evidence:
            data["evidence"] = self.evidence
        if self.fix is not None:
            data["fix"] = {
                "title": self.fix.title,
                "safe": self.fix.safe,
                "edits": [asdict(edit) for edit in self.fix.edits],
            }
        return data
