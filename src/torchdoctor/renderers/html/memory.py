"""The memory account's timeline as an inline SVG (the report's `memory` section, observe/memory/)."""

from __future__ import annotations

from html import escape
from typing import Any

from torchdoctor.core.wording import size_text

#: colours of the memory series (resident memory, the CUDA allocator's, the censuses' totals)
SERIES_COLOURS = {"rss": "#57606a", "allocated": "#0969da", "reserved": "#9a6700", "peak": "#cf222e", "tensors": "#1a7f37"}


def memory_plot(process: dict[str, Any], width: int = 720, height: int = 180) -> str:
    """The memory timeline of one process as an inline SVG: each per-step series, and the
    total of live tensors at each census (dots)."""
    steps = process.get("steps") or []
    lines: list[tuple[str, list[tuple[int, float]]]] = []
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


#: colours of the owners in the by-owner bars (others take the last)
OWNER_COLOURS = ("#0969da", "#1a7f37", "#9a6700", "#8250df", "#cf222e", "#bf3989", "#57606a")


def owner_bars(process: dict[str, Any], width: int = 720, row: int = 18, last: int = 12) -> str:
    """Memory by owner at each census (the last `last` of them), as stacked bars on one scale:
    parameters, gradients, optimizer state, activations, batch, what else is held."""
    censuses = [c for c in process.get("censuses") or [] if c.get("owners")][-last:]
    if not censuses:
        return ""
    owners = sorted({name for c in censuses for name in c["owners"]}, key=lambda n: -max(c["owners"].get(n, 0) for c in censuses))
    colour = {name: OWNER_COLOURS[min(i, len(OWNER_COLOURS) - 1)] for i, name in enumerate(owners)}
    top = max(sum(c["owners"].values()) for c in censuses) or 1
    left, height = 150, row * len(censuses) + 8
    svg = [f"<svg role='img' aria-label='memory by owner' width='{width}' height='{height}' viewBox='0 0 {width} {height}'>"]
    for i, census in enumerate(censuses):
        y, x = 4 + i * row, float(left)
        svg.append(f"<text x='0' y='{y + row - 6}' font-size='11'>step {census['step']}, {escape(str(census['phase']))}</text>")
        for name in owners:
            size = census["owners"].get(name, 0)
            if size <= 0:
                continue
            length = (width - left - 10) * size / top
            svg.append(f"<rect x='{x:.1f}' y='{y}' width='{max(length, 0.5):.1f}' height='{row - 4}' fill='{colour[name]}'>"
                       f"<title>{escape(name)}: {escape(size_text(size))}</title></rect>")
            x += length
    svg.append("</svg>")
    legend = ", ".join(f"<span style='color:{colour[name]}'>■</span> {escape(name)}" for name in owners)
    return "".join(svg) + f"<p class='hint'>by owner at each census: {legend}</p>"
