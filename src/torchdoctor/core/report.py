"""The report every command builds and every renderer draws: findings, checks, exit status."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from torchdoctor._version import __version__
from torchdoctor.core.finding import Finding, Severity
from torchdoctor.core.wording import counted

SCHEMA = "torchdoctor.report/1"


class ExitStatus(enum.IntEnum):
    """The contract's exit statuses (CONTRACT.md)."""

    CLEAN = 0  # no finding at or above --fail-on
    FINDINGS = 1  # a finding at or above --fail-on
    TOOL_ERROR = 2  # bad input, or torchdoctor could not do its whole job
    INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT


class FailOn(str, enum.Enum):
    """`--fail-on`: the least severe finding that makes the exit status 1."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    NEVER = "never"

    def reached_by(self, severity: Severity) -> bool:
        return self is not FailOn.NEVER and severity.rank >= Severity(self.value).rank


class Status(str, enum.Enum):
    """The outcome of one check (for the ✅/❌/⚠️ list and JUnit test cases)."""

    PASSED = "passed"
    FAILED = "failed"
    WARNED = "warned"
    SKIPPED = "skipped"

    @property
    def icon(self) -> str:
        return {"passed": "✅", "failed": "❌", "warned": "⚠️", "skipped": "⏭️"}[self.value]

    @classmethod
    def of(cls, findings: Iterable[Finding], applicable: bool = True) -> Status:
        """Failed on an error, warned on a warning; otherwise passed, or skipped when the check
        had nothing to look at and found nothing."""
        severities = {f.severity for f in findings}
        if Severity.ERROR in severities:
            return cls.FAILED
        if Severity.WARNING in severities:
            return cls.WARNED
        return cls.PASSED if applicable or severities else cls.SKIPPED


@dataclass
class CheckResult:
    """One named check (a health-check step, a probe, a preflight stage) and what it found."""

    name: str
    title: str
    status: Status = Status.PASSED
    detail: str = ""
    seconds: float = 0.0
    rules: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "status": self.status.value,
            "detail": self.detail,
            "seconds": round(self.seconds, 4),
            "rules": list(self.rules),
        }


@dataclass
class Report:
    """What one command found. `checks` is empty for commands that only list findings (lint).

    `meta` and `sections` are data written to the JSON report; the typed fields after them tell
    the CLI how to show the report and which exit status to give (only `title` is also written)."""

    command: str
    findings: list[Finding] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    sections: dict[str, Any] = field(default_factory=dict)
    #: the text report's first line (check, env, dist, run)
    title: str = ""
    #: "checks": the numbered ✅/❌ list with findings under their check; "flat": one line per finding (lint)
    layout: Literal["checks", "flat"] = "checks"
    #: where the report goes when no --output is given: run and `lint --diff` keep stdout for the user's output
    stream: Literal["stdout", "stderr"] = "stdout"
    #: the exit status when no finding reaches --fail-on (run: the script's own; `lint --diff` with fixes: 1)
    exit_status: int = ExitStatus.CLEAN
    #: rules that mean the tool could not do its whole job: any of them left after filtering exits 2
    fatal_rules: frozenset[str] = frozenset()
    #: run, trace: the title's part that says how the script ended ("script exited 0"); the CLI
    #: adds torchdoctor's own status after it, which the findings can make differ (see `exit_words`)
    script_end: str = ""
    #: blocks of text the terminal report prints after the findings (a table asked for with a
    #: flag, e.g. `run --memory`); the JSON report carries the same data in `sections`
    appendix: list[str] = field(default_factory=list)

    def add(self, finding: Finding) -> None:
        self.findings.append(finding)

    def sorted_findings(self) -> list[Finding]:
        return sorted(self.findings, key=lambda f: (-f.severity.rank, *f.sort_key()))

    def summary(self) -> dict[str, int]:
        counts = {s.value: 0 for s in Severity}
        for finding in self.findings:
            counts[finding.severity.value] += 1
        return counts

    def metrics(self) -> dict[str, float]:
        """The metrics every logger can take: `torchdoctor/errors`, `.../warnings`, `.../info`."""
        return {f"torchdoctor/{'info' if key == 'info' else key + 's'}": float(value) for key, value in self.summary().items()}

    def summary_text(self) -> str:
        """`1 error, 2 warnings, 0 info`: the counts in words, as every renderer writes them."""
        counts = self.summary()
        return f"{counted(counts['error'], 'error')}, {counted(counts['warning'], 'warning')}, {counts['info']} info"

    def fails(self, fail_on: FailOn | str) -> bool:
        """True when a finding is at or above `fail_on` (`never` never fails)."""
        threshold = FailOn(fail_on)
        return any(threshold.reached_by(f.severity) for f in self.findings)

    def exit_code(self, fail_on: FailOn | str) -> ExitStatus | int:
        """The contract's status: 2 for a fatal finding, 1 for one at or above `fail_on`,
        otherwise the command's own `exit_status`."""
        if any(f.rule in self.fatal_rules for f in self.findings):
            return ExitStatus.TOOL_ERROR
        if self.fails(fail_on):
            return ExitStatus.FINDINGS
        return self.exit_status

    def exit_words(self, fail_on: FailOn | str) -> str:
        """`torchdoctor exits 1 (1 error)`: the status the CLI gives and why, in words, for a title
        that already says the script's own (a script that exits 0 with an error finding gets 1)."""
        code = int(self.exit_code(fail_on))
        if code == ExitStatus.TOOL_ERROR and any(f.rule in self.fatal_rules for f in self.findings):
            why = " (torchdoctor could not do its whole job)"
        elif self.fails(fail_on):
            reached = [f for f in self.findings if FailOn(fail_on).reached_by(f.severity)]
            why = " (" + ", ".join(
                counted(n, s.value) if s is not Severity.INFO else f"{n} info"
                for s in Severity if (n := sum(f.severity is s for f in reached))
            ) + ")"
        else:
            why = " (the script's status)" if code else ""
        return f"torchdoctor exits {code}{why}"

    def to_dict(self) -> dict[str, Any]:
        """The contract's JSON report (`torchdoctor.report/1`), with extra sections after it."""
        data: dict[str, Any] = {
            "schema": SCHEMA,
            "tool": {"name": "torchdoctor", "version": __version__},
            "command": self.command,
            "findings": [f.to_dict() for f in self.sorted_findings()],
            "summary": self.summary(),
        }
        if self.checks:
            data["checks"] = [c.to_dict() for c in self.checks]
        if self.notices:
            data["notices"] = list(self.notices)
        meta = {"title": self.title, **self.meta} if self.title else self.meta
        if meta:
            data["meta"] = meta
        data.update(self.sections)
        return data
