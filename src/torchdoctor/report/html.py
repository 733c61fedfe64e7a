"""A single offline HTML page: no scripts, fonts or styles from the network.

Status marks are an emoji and a word (a system without an emoji font still shows the word);
`backticks` in messages, hints and notes become <code>, as in the rule docs.
"""

from __future__ import annotations

from html import escape
from typing import Any, TextIO

from torchdoctor._version import __version__
from torchdoctor.core.report import Report
from torchdoctor.core.wording import size_text

CSS = """
body{font:14px/1.5 system-ui,sans-serif;margin:2rem auto;max-width:72rem;color:#1b1f24;padding:0 1rem}
h1{font-size:1.4rem} table{border-collapse:collapse;width:100%} td,th{padding:.35rem .6rem;
border-bottom:1px solid #d0d7de;text-align:left;vertical-align:top} code{font-family:ui-monospace,monospace}
.error{color:#cf222e;font-weight:600}.warning{color:#9a6700;font-weight:600}.info{color:#0969da}
.hint{color:#57606a}.passed{color:#1a7f37}.failed{color:#cf222e}.warned{color:#9a6700}.skipped{color:#57606a}
"""


def write(report: Report, stream: TextIO, **_: Any) -> None:
    out = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>torchdoctor {escape(report.command)}</title><style>{CSS}</style></head><body>",
        f"<h1>torchdoctor {escape(report.command)}</h1>",
        f"<p>{escape(report.summary_text())} · torchdoctor {escape(__version__)}</p>",
    ]
    if report.checks:
        out.append("<h2>Checks</h2><table><tr><th>status</th><th>check</th><th>detail</th></tr>")
        for check in report.checks:
            out.append(
                f"<tr><td class='{check.status.value}'><span aria-hidden='true'>{check.status.icon}</span>"
                f" {check.status.value}</td><td>{escape(check.title)}</td><td>{inline(check.detail)}</td></tr>"
            )
        out.append("</table>")
    if report.findings:
        out.append("<h2>Findings</h2><table><tr><th>severity</th><th>where</th><th>rule</th><th>what and how to fix</th></tr>")
        for finding in report.sorted_findings():
            sev = finding.severity.value
            out.append(
                f"<tr><td class='{sev}'>{sev}</td><td><code>{escape(finding.location)}</code></td>"
                f"<td><code>{finding.rule}</code><br>{escape(finding.name)}</td>"
                f"<td>{inline(finding.message)}<div class='hint'>fix: {inline(finding.hint)}</div></td></tr>"
            )
        out.append("</table>")
    else:
        out.append("<p class='passed'>No findings.</p>")
    for process in report.sections.get("memory", {}).get("processes", []):
        out.append(memory_plot(process))
    for notice in report.notices:
        out.append(f"<p class='hint'>note: {inline(notice)}</p>")
    out.append("</body></html>\n")
    stream.write("\n".join(out))


def inline(text: str) -> str:
    """Escaped text with `code spans` as <code>; a backtick without a partner stays a backtick."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an odd number of backticks: the last one has no partner
        parts[-2:] = [f"{parts[-2]}`{parts[-1]}"]
    return "".join(escape(part) if i % 2 == 0 else f"<code>{escape(part)}</code>" for i, part in enumerate(parts))


#: colours of the memory series (resident memory, the CUDA allocator's, the censuses' totals)
SERIES_COLOURS = {"rss": "#57606a", "allocated": "#0969da", "reserved": "#9a6700", "peak": "#cf222e", "tensors": "#1a7f37"}


def memory_plot(process: dict[str, Any], width: int = 720, height: int = 180) -> str:
    """The memory timeline of one process as an inline SVG: each per-step series, and the
    total of live tensors at each census (dots)."""
    steps = process.get("steps") or []
    lines: list[tuple[str, list[tuple[int, int]]]] = []
    for name, values in (process.get("series") or {}).items():
        points = [(s, v) for s, v in zip(steps, values) if isinstance(v, (int, float))]
        if points:
            lines.append((name, points))
    censuses = [(c["step"], c["total"]) for c in process.get("censuses") or [] if c.get("phase") != "crash"]
    every = [p for _name, points in lines for p in points] + censuses
    if not every:
        return ""
    top = max(v for _s, v in every) or 1
    last = max(s for s, _v in every) or 1

    def xy(step: int, value: float) -> str:
        return f"{40 + (width - 50) * step / last:.1f},{height - 20 - (height - 30) * value / top:.1f}"

    who = f"rank {process['rank']}" if process.get("rank") is not None else f"pid {process.get('pid')}"
    svg = [f"<h2>Memory ({escape(who)}, {escape(str(process.get('device', 'cpu')))})</h2>",
           f"<svg role='img' aria-label='memory by step' width='{width}' height='{height}' viewBox='0 0 {width} {height}'>",
           f"<text x='0' y='12' font-size='11'>{escape(size_text(top))}</text>",
           f"<text x='{width - 60}' y='{height - 4}' font-size='11'>step {last}</text>"]
    for name, points in lines:
        colour = SERIES_COLOURS.get(name.split("@")[0], "#8250df")
        svg.append(f"<polyline fill='none' stroke='{colour}' stroke-width='1.5' points='{' '.join(xy(s, v) for s, v in points)}'>"
                   f"<title>{escape(name)}</title></polyline>")
    for step, total in censuses:
        svg.append(f"<circle cx='{xy(step, total).split(',')[0]}' cy='{xy(step, total).split(',')[1]}' r='3' "
                   f"fill='{SERIES_COLOURS['tensors']}'><title>step {step}: live tensors {escape(size_text(total))}</title></circle>")
    svg.append("</svg>")
    legend = ", ".join([*(escape(name) for name, _ in lines), "live tensors at each census (dots)"])
    return "".join(svg) + f"<p class='hint'>{legend}</p>"
