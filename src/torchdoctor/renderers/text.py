"""The terminal report (rich): checks as ✅/❌/⚠️, findings by severity, one summary line.

`lint` uses the flat layout instead: one `path:line:col: TD123 [severity] message` line per
finding and its hint, ruff/flake8 style, so editors and grep can read it.
"""

from __future__ import annotations

from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

from torchdoctor.core.finding import Finding, Severity
from torchdoctor.core.report import Report, Status
from torchdoctor.core.wording import counted

STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
STATUS_STYLE = {Status.PASSED: "green", Status.FAILED: "bold red", Status.WARNED: "yellow", Status.SKIPPED: "dim"}


def console_for(stream: TextIO, color: bool | None = None) -> Console:
    """A console that colours only real terminals (or when asked) and never wraps lines."""
    return Console(
        file=stream,
        force_terminal=color,
        no_color=color is False,
        highlight=False,
        soft_wrap=True,
        emoji=False,
    )


def write(report: Report, stream: TextIO, *, color: bool | None = None, **_: Any) -> None:
    console = console_for(stream, color)
    if report.layout == "flat":
        _flat(report, console)
    else:
        _grouped(report, console)
    if "trace" in report.sections or "op_paths" in report.sections:  # `torchdoctor trace`'s; run's series are not printed
        from torchdoctor.renderers import trace_sections

        trace_sections.text(report, console)
    for block in report.appendix:
        console.print(Text(block))
    for notice in report.notices:
        console.print(Text(f"note: {notice}", style="dim"))
    console.print(summary_line(report))


def finding_line(finding: Finding) -> Text:
    """`path:line:col: TD123 [severity] message` (location left out when there is none)."""
    text = Text()
    if finding.location:
        text.append(finding.location, style="bold")
        text.append(": ")
    text.append(finding.rule, style=STYLE[finding.severity])
    text.append(f" [{finding.severity.value}] ", style=STYLE[finding.severity])
    text.append(finding.message)
    if finding.count > 1:
        text.append(f" (x{finding.count})", style="dim")
    ranks = (finding.evidence or {}).get("ranks")  # a finding merged from several ranks
    if finding.rank is not None:
        text.append(f" [rank {finding.rank}]", style="dim")
    elif isinstance(ranks, list) and len(ranks) > 1:
        text.append(f" [ranks {', '.join(map(str, ranks))}]", style="dim")
    return text


def _hint(finding: Finding) -> Text:
    return Text(f"    fix: {finding.hint}", style="dim") if finding.hint else Text("")


def _flat(report: Report, console: Console) -> None:
    for finding in sorted(report.findings, key=lambda f: f.sort_key()):
        console.print(finding_line(finding))
        if finding.hint:
            console.print(_hint(finding))


def _grouped(report: Report, console: Console) -> None:
    if report.title:
        console.print(Text(report.title, style="bold"))
    for number, check in enumerate(report.checks, 1):
        line = Text(f"{check.status.icon} ")
        line.append(f"{number:>2}. {check.title}", style=STATUS_STYLE[check.status])
        if check.detail:
            line.append(f": {check.detail}", style="dim" if check.status is Status.PASSED else "")
        console.print(line)
    if report.checks and report.findings:
        console.print()
    for severity in Severity:
        group = [f for f in report.sorted_findings() if f.severity is severity]
        if not group:
            continue
        console.print(Text(f"{severity.icon} {severity.value.upper()}S ({len(group)})", style=STYLE[severity]))
        for finding in group:
            console.print(Text("  ").append(finding_line(finding)))
            if finding.hint:
                console.print(Text("  ").append(_hint(finding)))


def summary_line(report: Report) -> Text:
    counts = report.summary()
    text = Text("\n" if report.findings or report.checks else "")
    text.append(f"torchdoctor {report.command}: ", style="bold")
    style = "bold red" if counts["error"] else "yellow" if counts["warning"] else "green"
    text.append(report.summary_text(), style=style)
    if report.checks:
        by_status = {s: sum(c.status is s for c in report.checks) for s in Status}
        shown = [f"{n} {s.value}" for s, n in by_status.items() if n]
        text.append(f" · {counted(len(report.checks), 'check')}: {', '.join(shown)}")
    return text
