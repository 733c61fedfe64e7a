"""The sections of `torchdoctor trace`: the per-line table and the op paths, as text and HTML.

The text and HTML renderers call these when a report has them; the JSON report carries the
same data as it is (`trace`, `op_paths`).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

#: rows of the per-line table in the text report (the JSON report has every line)
TEXT_ROWS = 12
OPS_SHOWN = 3


def as_ms(us: float) -> str:
    return f"{us / 1000:.2f} ms"


def per_step_of(value: float, steps: int) -> float:
    return value / steps if steps else value


def times_per_step(count: int, steps: int) -> str:
    per = count / steps if steps else count
    return f"x{per:g}" if per == int(per) else f"x{per:.1f}"


def op_text(op: dict[str, Any], steps: int) -> str:
    """`aten::addmm x2 [16x32, 32x64 · float32]` (counts per step)."""
    details = [", ".join(op.get("shapes", [])[:1])] if op.get("shapes") else []
    if op.get("dtypes"):
        details.append("/".join(op["dtypes"]))
    text = f"{op['op']} {times_per_step(op['count'], steps)}"
    if details:
        text += f" [{' · '.join(d for d in details if d)}]"
    chain = op.get("dispatch")
    if chain:
        text += " via " + "→".join(step["key"] + ("(composite)" if step["kind"] == "math kernel" else "") for step in chain)
    return text


def summary_line(section: dict[str, Any]) -> str:
    steps = section.get("steps") or []
    n = len(steps)
    per_step = per_step_of(section.get("total_us", 0), n)
    data = per_step_of(sum(s.get("data_us", 0) for s in steps), n)
    device = per_step_of(sum(s.get("device_us", 0) for s in steps), n)
    parts = [f"{n} traced step{'s' if n != 1 else ''}", f"{as_ms(per_step)} of op time per step (CPU)"]
    if device:
        parts.append(f"GPU busy {as_ms(device)} per step")
    parts.append(f"{as_ms(data)} waiting for data")
    return " · ".join(parts)


def text(report: Any, console: Console) -> None:
    section = report.sections.get("trace")
    if section:
        _table(section, console)
    for path in report.sections.get("op_paths") or []:
        _path_text(path, console)


def _table(section: dict[str, Any], console: Console) -> None:
    steps = len(section.get("steps") or []) or 1
    console.print(Text(summary_line(section), style="bold"))
    console.print(Text(f"  {'share':>6}  {'per step':>9}  line", style="dim"))
    for line in (section.get("lines") or [])[:TEXT_ROWS]:
        head = Text(f"  {line['share']:>6.1%}  {as_ms(per_step_of(line['us'], steps)):>9}  ")
        head.append(line["location"] + (" [compiled]" if line.get("compiled") else ""), style="bold")
        if line.get("source"):
            head.append(f"  {line['source']}")
        console.print(head)
        ops = line.get("ops") or []
        if ops:
            shown = ", ".join(op_text(op, steps) for op in ops[:OPS_SHOWN])
            console.print(Text(f"{'':21}calls {as_ms(per_step_of(line['forward_us'], steps))}: {shown}", style="dim"))
        backward = line.get("backward") or {}
        if line.get("backward_us"):
            nodes = ", ".join(f"{name} {times_per_step(n, steps)}" for name, n in list((backward.get("nodes") or {}).items())[:OPS_SHOWN])
            bops = ", ".join(f"{op['op']} {times_per_step(op['count'], steps)}" for op in (backward.get("ops") or [])[:OPS_SHOWN])
            console.print(Text(f"{'':21}backward {as_ms(per_step_of(line['backward_us'], steps))}: {nodes}"
                               + (f" ({bops})" if bops else ""), style="dim"))
    rest = (section.get("lines") or [])[TEXT_ROWS:]
    if rest:
        share = sum(line["share"] for line in rest)
        console.print(Text(f"  {share:>6.1%}  {len(rest)} more line(s) (all of them in the JSON report)", style="dim"))
    remainder = sum(r["us"] for r in section.get("remainder") or [])
    if remainder:
        console.print(Text(f"  {remainder / (section.get('total_us') or 1):>6.1%}  under no line of yours: "
                           + ", ".join(r["name"] for r in section["remainder"][:3]), style="dim"))
    console.print()


def _path_text(path: dict[str, Any], console: Console) -> None:
    if path.get("error"):
        console.print(Text(f"{path.get('op') or path.get('line')}: {path['error']}", style="yellow"))
        return
    console.print(Text(path["schema"], style="bold"))
    torch = path.get("torch") or {}
    console.print(Text(f"  torch {torch.get('version')} (git {str(torch.get('commit'))[:12]}, links at {torch.get('ref')})", style="dim"))
    for label, place in (("native_functions.yaml", path.get("native_functions")),
                         ("structured delegate", path.get("structured_delegate"))):
        if place is None:
            continue
        console.print(Text(f"  {label}: {place['op']} at {place['file']}:{place['line']}  {place['url']}"))
        for row in place["text"].splitlines():
            console.print(Text(f"      {row}", style="dim"))
    derivative = path.get("derivative")
    if derivative:
        console.print(Text(f"  backward formula: {derivative['file']}:{derivative['line']}  {derivative['url']}"))
    console.print(Text("  kernels registered in this install:"))
    for registration in path.get("registrations") or []:
        kernel = f" kernel {registration['kernel']}" if registration.get("kernel") else ""
        generated = " (generated at build time)" if registration.get("generated") else ""
        inactive = " (inactive)" if registration.get("inactive") else ""
        where = registration.get("path") or registration["where"]
        line = Text(f"    {registration['key']:<34} {where}")
        line.append(f"{generated}{inactive}{kernel}", style="dim")
        if registration.get("url") and not registration.get("generated"):
            line.append(f"  {registration['url']}", style="dim")
        console.print(line)
    console.print(Text("  dispatch table (what each key runs):"))
    for row in path.get("table") or []:
        kernel = f" ({row['kernel']})" if row.get("kernel") else ""
        console.print(Text(f"    {row['key']:<14} {row['kind']:<24} {row.get('path') or row['where']}{kernel}", style="dim"))
    if path.get("served"):
        where = ", ".join(path.get("lines") or [])
        chain = " → ".join(f"{s['key']} ({s['kind']})" for s in path["served"])
        console.print(Text(f"  served in this run{f' at {where}' if where else ''}: {chain}", style="bold"))
    for note in path.get("notes") or []:
        console.print(Text(f"  note: {note}", style="dim"))
    console.print()
