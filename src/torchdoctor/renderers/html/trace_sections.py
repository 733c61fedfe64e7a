"""The `trace` and `op_paths` sections as HTML (the text report draws them in renderers/trace_sections.py)."""

from __future__ import annotations

from html import escape
from typing import Any

from torchdoctor.renderers.html.code import inline
from torchdoctor.renderers.trace_sections import OPS_SHOWN, as_ms, op_text, per_step_of, summary_line, times_per_step


def trace_html(section: dict[str, Any]) -> str:
    """The `trace` section as HTML: the lines by their share of the step (renderers/html draws it)."""
    out: list[str] = []
    if section:
        steps = len(section.get("steps") or []) or 1
        out.append(f"<h2>Trace</h2><p>{escape(summary_line(section))}</p>")
        out.append("<table><tr><th>share</th><th>per step</th><th>line</th><th>its calls (per step)</th><th>their backward</th></tr>")
        for line in section.get("lines") or []:
            ops = "<br>".join(escape(op_text(op, steps)) for op in (line.get("ops") or [])[:OPS_SHOWN])
            nodes = ", ".join(f"{escape(name)} {times_per_step(n, steps)}" for name, n in ((line.get("backward") or {}).get("nodes") or {}).items())
            out.append(
                f"<tr><td>{line['share']:.1%}</td><td>{as_ms(per_step_of(line['us'], steps))}</td>"
                f"<td><code>{escape(line['location'])}</code>{' [compiled]' if line.get('compiled') else ''}"
                f"<div class='hint'><code>{escape(line.get('source') or '')}</code></div></td>"
                f"<td>{ops}</td><td>{nodes}</td></tr>"
            )
        out.append("</table>")
    return "".join(out)


def op_paths_html(paths: list[dict[str, Any]]) -> str:
    """The `op_paths` section (`trace --op`) as HTML: each op from its schema to this install's kernels."""
    out: list[str] = []
    for path in paths or []:
        if path.get("error"):
            out.append(f"<p class='warning'>{escape(path.get('op') or path.get('line') or '')}: {escape(path['error'])}</p>")
            continue
        out.append(f"<h2><code>{escape(path['schema'])}</code></h2>")
        for label, place in (("native_functions.yaml", path.get("native_functions")), ("structured delegate", path.get("structured_delegate"))):
            if place is not None:
                out.append(f"<p>{label}: <a href='{escape(place['url'])}'>{escape(place['op'])} at {escape(place['file'])}:{place['line']}</a></p>"
                           f"<pre>{escape(place['text'])}</pre>")
        out.append("<table><tr><th>key</th><th>registered at</th><th>kernel</th></tr>")
        for registration in path.get("registrations") or []:
            where = escape(registration.get("path") or registration["where"])
            link = f"<a href='{escape(registration['url'])}'>{where}</a>" if registration.get("url") else where
            out.append(f"<tr><td><code>{escape(registration['key'])}</code></td><td>{link}</td>"
                       f"<td><code>{escape(registration.get('kernel') or '')}</code></td></tr>")
        out.append("</table>")
        if path.get("served"):
            out.append("<p>served in this run: " + " → ".join(f"<code>{escape(s['key'])}</code> ({escape(s['kind'])})" for s in path["served"]) + "</p>")
        for note in path.get("notes") or []:
            out.append(f"<p class='hint'>note: {inline(note)}</p>")
    return "".join(out)
