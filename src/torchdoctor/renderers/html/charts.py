"""The geometry of the report's pictures: a series table (`series` in the JSON report) in, the
shapes to draw out (points, rectangles, ticks, colours). The template draws them as inline SVG.

Each table says how it is drawn (`kind`): `line` (a curve per column), `heatmap` (a row per
column, e.g. per layer, a cell per step) and `stacked` (columns that add up, e.g. the parts of
a step's time). Tables of another kind, or of a later torchdoctor, are left to the JSON.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from torchdoctor.env.text import human_bytes as text_bytes

#: curves and stacked charts sit two to a row; a heatmap takes a whole row
WIDTH, HEIGHT, HEATMAP_WIDTH = 540, 220, 1100
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 12, 30
#: room for the layer names left of a heatmap
NAMES = 200
#: categorical colours (Okabe-Ito, readable by colour-blind people), then a sequential scale
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
VIRIDIS = ("#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725")
ZERO, MISSING = "#f2f2f2", "#d9d9d9"
#: a heatmap draws at most this many cells (steps are merged into bins beyond it)
MAX_CELLS = 12000
#: the most points a curve or an area keeps (steps are merged into bins beyond it)
MAX_POINTS = 600
#: a stacked chart of at most this many steps draws bars (areas beyond)
MAX_BARS = 150
#: the colour of a finding's mark on a curve (a loss spike, a stall)
MARK = "#D55E00"


@dataclass
class Tick:
    position: float
    label: str


@dataclass
class Chart:
    """What one picture needs: its kind, size, axes and marks."""

    name: str
    title: str
    kind: str
    width: int = WIDTH
    height: int = HEIGHT
    x_ticks: list[Tick] = field(default_factory=list)
    y_ticks: list[Tick] = field(default_factory=list)
    y_label: str = ""
    lines: list[dict[str, Any]] = field(default_factory=list)  # line: colour, name, segments of points
    areas: list[dict[str, Any]] = field(default_factory=list)  # stacked: colour, name, polygon points
    cells: list[dict[str, Any]] = field(default_factory=list)  # heatmap: x, y, w, h, colour
    rows: list[Tick] = field(default_factory=list)  # heatmap: the row labels
    legend: list[dict[str, str]] = field(default_factory=list)
    note: str = ""
    plot: dict[str, float] = field(default_factory=dict)
    marks: list[dict[str, Any]] = field(default_factory=list)  # findings at a step (a loss spike, a stall): x, label


def charts(series: dict[str, Any]) -> list[Chart]:
    """A chart per drawable table, in the order the tables come, all on the same step axis."""
    tables = {name: table for name, table in series.items()
              if isinstance(table, dict) and table.get("steps") and table.get("columns")}
    if not tables:
        return []
    domain = (min(t["steps"][0] for t in tables.values()) - 0.5, max(t["steps"][-1] for t in tables.values()) + 0.5)
    drawn = []
    for name, table in tables.items():
        draw = {"line": line_chart, "heatmap": heatmap, "stacked": stacked_chart}.get(table.get("kind", "line"))
        if draw is not None:
            drawn.append(draw(name, table, domain))
    return drawn


# -- scales --------------------------------------------------------------------------------------


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round values (1, 2 or 5 times a power of ten apart) covering [low, high]."""
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def short(value: float) -> str:
    """A number in at most ~5 characters: 0.001, 2.5e-05, 1200, 3.1e+06."""
    if value == 0:
        return "0"
    if 1e-3 <= abs(value) < 1e5:
        return f"{value:.4g}"
    return f"{value:.2g}"


def seconds(value: float) -> str:
    return f"{value * 1e3:.3g} ms" if value < 1 else f"{value:.3g} s"


def human_bytes(size: Any) -> str:
    """`512 B`, `4 KiB`, `1.5 GiB` as the text reports write them (a dash for anything that is not a number)."""
    return text_bytes(size) if isinstance(size, (int, float)) else "—"


#: how the values of a unit are written on an axis and in a legend
FORMATS = {"s": seconds, "bytes": human_bytes}


class Scale:
    """Data to pixels on one axis, linear or log10 (log only for positive data spanning 100x)."""

    def __init__(self, low: float, high: float, start: float, end: float, log: bool = False) -> None:
        self.log = log
        if log:
            low, high = math.log10(low), math.log10(high)
        if high == low:
            low, high = low - 0.5, high + 0.5
        self.low, self.high, self.start, self.end = low, high, start, end

    def __call__(self, value: float) -> float:
        if self.log:
            value = math.log10(value)
        return round(self.start + (value - self.low) / (self.high - self.low) * (self.end - self.start), 2)

    def ticks(self, formatter: Any = short) -> list[Tick]:
        if self.log:
            exponents = range(math.floor(self.low), math.ceil(self.high) + 1)
            stride = max(1, len(exponents) // 6)
            return [Tick(self(10.0 ** e), formatter(10.0 ** e)) for e in exponents[::stride] if self.low <= e <= self.high]
        return [Tick(self(v), formatter(v)) for v in nice_ticks(self.low, self.high) if self.low - 1e-12 <= v <= self.high + 1e-12]


def _frame(chart: Chart, height: int) -> tuple[float, float, float, float]:
    chart.height = height
    chart.plot = {"x": LEFT, "y": TOP, "w": chart.width - LEFT - RIGHT, "h": height - TOP - BOTTOM}
    return LEFT, chart.width - RIGHT, height - BOTTOM, TOP


def _step_axis(domain: tuple[float, float], start: float, end: float) -> tuple[Scale, list[Tick]]:
    """The step axis every chart shares (`domain`: half a step before the first, after the last)."""
    low, high = domain
    scale = Scale(low, high, start, end)
    ticks = [Tick(scale(v), f"{v:g}") for v in nice_ticks(low, high, 6) if low <= v <= high and v == int(v)]
    return scale, ticks


def _edges(steps: list[int], domain: tuple[float, float]) -> list[float]:
    """Where each step's cell starts and ends: halfway to its neighbours (len(steps) + 1 values)."""
    middles = [(a + b) / 2 for a, b in zip(steps, steps[1:])]
    return [max(domain[0], steps[0] - 0.5), *middles, min(domain[1], steps[-1] + 0.5)]


def _bins(count: int, limit: int) -> list[range]:
    """`count` indices in at most `limit` consecutive groups."""
    size = max(1, math.ceil(count / limit))
    return [range(i, min(i + size, count)) for i in range(0, count, size)]


def _finite(values: list[Any]) -> list[float]:
    return [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]


# -- kinds ---------------------------------------------------------------------------------------


def line_chart(name: str, table: dict[str, Any], domain: tuple[float, float]) -> Chart:
    """A curve per column; a log scale when the values are positive and span more than 100x."""
    unit = table.get("unit", "")
    chart = Chart(name, table.get("title") or name, "line", y_label="" if unit in FORMATS else unit)
    left, right, bottom, top = _frame(chart, HEIGHT)
    steps, rows, columns = table["steps"], table["values"], table["columns"]
    values = _finite([v for row in rows for v in row])
    if not values:
        chart.note = "no finite value was recorded"
        return chart
    low, high = min(values), max(values)
    if high == low:  # a constant (a fixed learning rate): from zero to a little above it
        low, high = (0.0, high * 1.25) if high > 0 else (low - 1.0, high + 1.0)
    log = low > 0 and high / low > 100
    y = Scale(low, high, bottom, top, log)
    x, chart.x_ticks = _step_axis(domain, left, right)
    formatter = FORMATS.get(unit, short)
    chart.y_ticks = y.ticks(formatter)
    for i, column in enumerate(columns):
        colour = PALETTE[i % len(PALETTE)]
        segments: list[list[str]] = [[]]
        for group in _bins(len(steps), MAX_POINTS):
            cell = _finite([rows[j][i] for j in group])
            if not cell or (log and min(cell) <= 0):
                if segments[-1]:
                    segments.append([])  # a gap: nothing recorded, or NaN / Inf
                continue
            step = steps[group[len(group) // 2]]
            segments[-1].append(f"{x(step)},{y(statistics.fmean(cell))}")
        last = next((rows[j][i] for j in range(len(rows) - 1, -1, -1) if rows[j][i] is not None), None)
        chart.lines.append({"colour": colour, "name": column, "segments": [s for s in segments if s],
                            "last": formatter(last) if last is not None else "—"})
        chart.legend.append({"colour": colour, "label": column})
    if log:
        chart.note = "log scale"
    _mark(chart, table, x)
    return chart


def heatmap(name: str, table: dict[str, Any], domain: tuple[float, float]) -> Chart:
    """A row per column (layer), a cell per step (merged into bins: the largest value shows), colour
    by the value's log10 (viridis); zero and missing cells stand apart in greys."""
    chart = Chart(name, table.get("title") or name, "heatmap", width=HEATMAP_WIDTH)
    steps, rows, columns = table["steps"], table["values"], table["columns"]
    row_height = max(4.0, min(24.0, 480 / len(columns)))
    height = int(TOP + BOTTOM + row_height * len(columns))
    left, right, bottom, top = _frame(chart, height)
    chart.plot["x"] = left = NAMES
    chart.plot["w"] = right - left
    positive = sorted(v for v in _finite([v for row in rows for v in row]) if v > 0)
    if positive:
        low = math.log10(positive[round(0.01 * (len(positive) - 1))])
        high = math.log10(positive[round(0.99 * (len(positive) - 1))])
        if high - low < 1e-9:
            low, high = low - 0.5, high + 0.5
    bins = _bins(len(steps), max(8, MAX_CELLS // len(columns)))
    x, chart.x_ticks = _step_axis(domain, left, right)
    edges = [x(e) for e in _edges(steps, domain)]
    every = max(1, math.ceil(10 / row_height))
    for r, column in enumerate(columns):
        y = top + r * row_height
        if r % every == 0:
            chart.rows.append(Tick(round(y + row_height / 2, 2), column))
        for group in bins:
            cell = _finite([rows[j][r] for j in group])
            if not cell:
                colour = MISSING
            elif max(cell) <= 0:
                colour = ZERO
            else:
                level = (math.log10(max(cell)) - low) / (high - low)
                colour = VIRIDIS[min(len(VIRIDIS) - 1, max(0, int(level * len(VIRIDIS))))]
            start, end = edges[group[0]], edges[group[-1] + 1]
            chart.cells.append({"x": start, "y": round(y, 2), "w": round(end - start + 0.05, 2),
                                "h": round(row_height, 2), "colour": colour})
    if positive:
        chart.legend = [{"colour": VIRIDIS[0], "label": f"≤ {short(10 ** low)}"},
                        {"colour": VIRIDIS[len(VIRIDIS) // 2], "label": short(10 ** ((low + high) / 2))},
                        {"colour": VIRIDIS[-1], "label": f"≥ {short(10 ** high)}"}]
    chart.legend += [{"colour": ZERO, "label": "zero"}, {"colour": MISSING, "label": "none (no gradient, or not sampled)"}]
    chart.note = "log colour scale" + (f"; {len(steps)} steps in {len(bins)} columns (largest value shown)" if len(bins) < len(steps) else "")
    return chart


def stacked_chart(name: str, table: dict[str, Any], domain: tuple[float, float]) -> Chart:
    """Columns stacked on each other: a bar per step (areas when there are many steps, the mean
    over merged steps); the scale stops at the 98th percentile of the totals, so one long step
    (a validation pass) does not flatten the rest."""
    unit = table.get("unit", "")
    chart = Chart(name, table.get("title") or name, "stacked", y_label="" if unit in FORMATS else unit)
    left, right, bottom, top = _frame(chart, HEIGHT)
    steps, rows, columns = table["steps"], table["values"], table["columns"]
    bins = _bins(len(steps), MAX_POINTS)
    means = [[statistics.fmean(_finite([rows[j][c] for j in group]) or [0.0]) for c in range(len(columns))] for group in bins]
    totals = sorted(sum(m) for m in means)
    ceiling = totals[int(0.98 * (len(totals) - 1))] * 1.05 or 1.0
    formatter = FORMATS.get(unit, short)
    y = Scale(0.0, ceiling, bottom, top)
    chart.y_ticks = y.ticks(formatter)
    x, chart.x_ticks = _step_axis(domain, left, right)
    edges = [x(e) for e in _edges(steps, domain)]
    centres = [x(steps[group[len(group) // 2]]) for group in bins]
    bars = len(bins) <= MAX_BARS
    base = [0.0] * len(bins)
    for c, column in enumerate(columns):
        colour = PALETTE[c % len(PALETTE)]
        upper = [base[i] + means[i][c] for i in range(len(bins))]
        share = sum(m[c] for m in means) / (sum(totals) or 1.0)
        median = statistics.median(_finite([row[c] for row in rows]) or [0.0])
        label = f"{column}: median {formatter(median)}, {share:.0%}"
        if bars:
            for i, group in enumerate(bins):
                low, high = y(min(base[i], ceiling)), y(min(upper[i], ceiling))
                start, end = edges[group[0]], edges[group[-1] + 1]
                chart.cells.append({"x": round(start + 0.15 * (end - start), 2), "y": high, "w": round(0.7 * (end - start), 2),
                                    "h": round(low - high, 2), "colour": colour, "label": column})
        else:
            points = [f"{cx},{y(min(v, ceiling))}" for cx, v in zip(centres, upper)]
            points += [f"{cx},{y(min(v, ceiling))}" for cx, v in reversed(list(zip(centres, base)))]
            chart.areas.append({"colour": colour, "name": column, "points": " ".join(points), "label": label})
        chart.legend.append({"colour": colour, "label": label})
        base = upper
    over = sum(1 for total in totals if total > ceiling)
    if over:
        chart.note = f"{over} longer step{'s' if over != 1 else ''} cut at the top (longest {formatter(totals[-1])})"
    _mark(chart, table, x)
    return chart


def _mark(chart: Chart, table: dict[str, Any], x: Scale) -> None:
    """A finding's moment (a table's `marks`: step, code, label) as a vertical mark at its step."""
    for mark in table.get("marks") or []:
        step = mark.get("step") if isinstance(mark, dict) else None
        if not isinstance(step, (int, float)):
            continue
        position = min(max(x(step), chart.plot["x"]), chart.plot["x"] + chart.plot["w"])
        chart.marks.append({"x": position, "label": f"{mark.get('code', '')} at step {step:g}: {mark.get('label', '')}",
                            "code": str(mark.get("code", "")), "colour": MARK})
    if chart.marks:
        codes = sorted({m["code"] for m in chart.marks if m["code"]})
        chart.legend.append({"colour": MARK, "label": f"findings at their step ({', '.join(codes)})" if codes else "findings at their step"})
