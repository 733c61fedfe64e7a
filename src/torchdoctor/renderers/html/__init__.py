"""The HTML report: one self-contained page (inline CSS and SVG; no script, font or style from
the network), rendered with Jinja2 from the finished `Report`.

What it shows, in this order: the findings (each with the user's source lines around it, the
fix, and a link to its rule's doc, embedded at the end of the page), the per-step curves of a
run (`series`), the checks with their evidence (`check`, `dist`), the latency / bandwidth
table of `dist`, any other section of the JSON report, the notices, and the docs of the rules
that fired. `lint` groups its findings by file.

The page model is built here; `charts.py` computes the pictures' geometry and `code.py`
highlights source; the templates (`templates/`) only lay them out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from itertools import groupby
from pathlib import Path
from typing import Any, TextIO

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from torchdoctor._version import __version__
from torchdoctor.core import registry
from torchdoctor.core.errors import UsageError
from torchdoctor.core.finding import Finding, Severity
from torchdoctor.core.report import Report
from torchdoctor.core.wording import counted
from torchdoctor.renderers.html import code, trace_sections
from torchdoctor.renderers.html.charts import charts, human_bytes
from torchdoctor.renderers.html.code import inline
from torchdoctor.renderers.html.memory import memory_plot, owner_bars

#: sections drawn by their own part of the page (the rest are shown as JSON)
DRAWN_SECTIONS = ("series", "distributed")
#: pictures of the other sections, shown above their JSON: section name -> a function from the
#: section's value to HTML it has escaped itself (where a section's own plot plugs in, e.g. the
#: memory account's timeline: `SECTION_DRAWINGS["memory"] = memory_timeline`)
SECTION_DRAWINGS: dict[str, Callable[[Any], str]] = {
    "trace": trace_sections.trace_html,
    "op_paths": trace_sections.op_paths_html,
    "memory": lambda section: "".join(memory_plot(process) + owner_bars(process) for process in section.get("processes", [])),
}


def write(report: Report, stream: TextIO, **_: Any) -> None:
    stream.write(render(report))


def render(report: Report) -> str:
    code.forget()  # files may have changed since the last report of this process
    template = _environment().get_template("report.html.j2")
    return template.render(page=_page(report), css=Markup(code.STYLE), version=__version__)


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("torchdoctor.renderers.html", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["inline"] = inline
    env.filters["bytes"] = human_bytes
    env.filters["counted"] = counted
    return env


# -- the page model ---------------------------------------------------------------------------


def _page(report: Report) -> dict[str, Any]:
    findings = report.sorted_findings()
    cards = {id(f): _card(f, i) for i, f in enumerate(findings, 1)}
    return {
        "command": report.command,
        "title": report.title or f"torchdoctor {report.command}",
        "summary": report.summary(),
        "summary_text": report.summary_text(),
        "groups": _groups(report, findings, cards),
        "charts": charts(report.sections.get("series") or {}),
        "series_from": report.meta.get("series_from"),
        "checks": _checks(report, cards),
        "bandwidth": (report.sections.get("distributed") or {}).get("bandwidth") or [],
        "sections": [_section(name, value) for name, value in report.sections.items() if name not in DRAWN_SECTIONS],
        "notices": report.notices,
        "rules": _rules(findings),
    }


def _section(name: str, value: Any) -> dict[str, Any]:
    draw = SECTION_DRAWINGS.get(name)
    return {"name": name, "drawing": Markup(draw(value)) if draw else "",
            "json": json.dumps(value, indent=2, ensure_ascii=False, default=str)}


def _card(finding: Finding, number: int) -> dict[str, Any]:
    return {
        "id": f"finding-{number}",
        "finding": finding,
        "severity": finding.severity.value,
        "context": code.context(finding.file, finding.line, finding.end_line),
        "edit": _edit(finding),
        "evidence": json.dumps(finding.evidence, indent=2, ensure_ascii=False, default=str) if finding.evidence else "",
    }


def _groups(report: Report, findings: list[Finding], cards: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """lint: one group per file (in path order); the other commands: one group per severity."""
    if report.command == "lint":
        by_file = sorted(findings, key=lambda f: f.sort_key())
        return [{"title": name or "no file", "anchor": f"file-{i}", "cards": [cards[id(f)] for f in group]}
                for i, (name, group) in enumerate(((k, list(g)) for k, g in groupby(by_file, key=lambda f: f.file)), 1)]
    groups = []
    for severity in Severity:
        found = [cards[id(f)] for f in findings if f.severity is severity]
        if found:
            groups.append({"title": f"{severity.value}s" if severity is not Severity.INFO else "info",
                           "anchor": severity.value, "cards": found})
    return groups


def _checks(report: Report, cards: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each check with the findings that are its evidence (those of the rules it covers)."""
    rows = []
    for number, check in enumerate(report.checks, 1):
        own = [cards[id(f)] for f in report.findings if f.rule in check.rules]
        rows.append({"number": number, "check": check, "cards": own})
    return rows


def _rules(findings: Iterable[Finding]) -> list[dict[str, Any]]:
    fired = sorted({f.rule for f in findings})
    rules = []
    for code_ in fired:
        try:
            rule = registry.get(code_)
        except UsageError:  # a finding of a rule this version does not know (an old JSON report)
            continue
        rules.append({"rule": rule, "doc": code.markdown(rule.doc)})
    return rules


def _edit(finding: Finding) -> dict[str, Any] | None:
    """A finding's fix as a small diff of the file (lint's fixes), when the file can be read."""
    fix = finding.fix
    if fix is None or not fix.edits or finding.file is None:
        return None
    from torchdoctor.linter.fixes import apply_fixes, unified_diff
    from torchdoctor.linter.source import Source, Unreadable, decode, read_bytes

    try:
        text, encoding = decode(read_bytes(Path(finding.file)))
    except (Unreadable, OSError):
        return None
    source = Source(path=finding.file, text=text, encoding=encoding)
    fixed, applied = apply_fixes(source, [fix])
    if not applied:
        return None
    lines = unified_diff(finding.file, text, fixed, context=1).splitlines()[2:]  # without the ---/+++ header
    return {"title": fix.title, "safe": fix.safe, "lines": lines}
