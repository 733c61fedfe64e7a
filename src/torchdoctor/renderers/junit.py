"""JUnit XML, so CI dashboards show each check as a test case.

One test case per check (per rule for commands without checks, such as lint); findings at or
above `--fail-on` are failures, the others are written to the case's system-out.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import Any, TextIO

from torchdoctor.core.finding import Finding
from torchdoctor.core.report import FailOn, Report, Status


def _failing(finding: Finding, fail_on: FailOn) -> bool:
    return FailOn(fail_on).reached_by(finding.severity)


def _describe(finding: Finding) -> str:
    where = f"{finding.location}: " if finding.location else ""
    return f"{where}{finding.rule} [{finding.severity.value}] {finding.message}\n    fix: {finding.hint}"


def _cases(report: Report) -> list[tuple[str, Status | None, float, list[Finding]]]:
    """(name, status or None, seconds, findings) for every test case."""
    if report.checks:
        claimed: set[int] = set()
        cases: list[tuple[str, Status | None, float, list[Finding]]] = []
        for check in report.checks:
            own = [f for f in report.findings if f.rule in check.rules]
            claimed.update(id(f) for f in own)
            cases.append((check.title, check.status, check.seconds, own))
        rest = [f for f in report.findings if id(f) not in claimed]
        if rest:
            cases.append(("other findings", None, 0.0, rest))
        return cases
    by_rule: dict[str, list[Finding]] = defaultdict(list)
    for finding in report.findings:
        by_rule[f"{finding.rule} {finding.name}"].append(finding)
    if not by_rule:
        return [(f"torchdoctor {report.command}", None, 0.0, [])]
    return [(name, None, 0.0, found) for name, found in sorted(by_rule.items())]


def write(report: Report, stream: TextIO, *, fail_on: FailOn = FailOn.ERROR, **_: Any) -> None:
    suite_name = f"torchdoctor.{report.command}"
    suite = ET.Element("testsuite", name=suite_name)
    tests = failures = skipped = 0
    for name, status, seconds, found in _cases(report):
        tests += 1
        case = ET.SubElement(suite, "testcase", classname=suite_name, name=name, time=f"{seconds:.3f}")
        failing = [f for f in found if _failing(f, fail_on)]
        if failing:
            failures += 1
            failure = ET.SubElement(case, "failure", message=failing[0].message, type=failing[0].rule)
            failure.text = "\n".join(_describe(f) for f in failing)
        elif status is Status.SKIPPED:
            skipped += 1
            ET.SubElement(case, "skipped", message=name)
        others = [f for f in found if f not in failing]
        if others:
            ET.SubElement(case, "system-out").text = "\n".join(_describe(f) for f in others)
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    root = ET.Element("testsuites", name="torchdoctor", tests=str(tests), failures=str(failures))
    root.append(suite)
    ET.indent(root)
    stream.write('<?xml version="1.0" encoding="utf-8"?>\n')
    stream.write(ET.tostring(root, encoding="unicode"))
    stream.write("\n")
