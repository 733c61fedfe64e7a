"""GitHub Actions workflow commands: one annotation per finding, shown on the pull request
(and one notice when there is none, so the log says the step ran)."""

from __future__ import annotations

from typing import Any, TextIO

from torchdoctor.core.finding import Finding, Severity
from torchdoctor.core.report import Report
from torchdoctor.core.wording import counted

COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(value: str) -> str:
    return _data(value).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding) -> str:
    props = []
    if finding.file is not None:
        props.append(f"file={_property(finding.file)}")
        if finding.line is not None:
            props.append(f"line={finding.line}")
        if finding.column is not None:
            props.append(f"col={finding.column + 1}")
    props.append(f"title={_property(f'{finding.rule} {finding.name}')}")
    body = _data(f"{finding.message}\nFix: {finding.hint}")
    return f"::{COMMAND[finding.severity]} {','.join(props)}::{body}"


def write(report: Report, stream: TextIO, **_: Any) -> None:
    for finding in report.sorted_findings():
        stream.write(annotation(finding) + "\n")
    if not report.findings:
        files = report.meta.get("files")
        where = f" in {counted(files, 'file')}" if isinstance(files, int) else ""
        stream.write(f"::notice title={_property(f'torchdoctor {report.command}')}::{_data(f'no findings{where}')}\n")
