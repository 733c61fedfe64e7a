"""A per-step series' table: a value per column at sampled steps, bounded in rows (see
instruments/series.py, which keeps the tables; detectors add to them through `ctx.series`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

#: rows kept per table before decimating (scalar curves)
CURVE_ROWS = 2048
#: marks kept per table
MAX_MARKS = 32


class Table:
    """One series: a value per column at sampled steps, at most `capacity` rows.

    `kind` says how to draw it: `line` (a curve per column), `heatmap` (columns are layers),
    `stacked` (columns add up, e.g. the parts of a step's time)."""

    def __init__(self, *, unit: str = "", kind: str = "line", capacity: int = CURVE_ROWS, stride: int = 1, title: str = "") -> None:
        self.unit = unit
        self.kind = kind
        self.title = title
        self.capacity = capacity
        self.stride = stride
        self.columns: list[str] = []
        self.steps: list[int] = []
        self.rows: list[list[Any]] = []
        self._index: dict[str, int] = {}
        #: events drawn on the chart at their step (a loss spike, a stall): step, code, label
        self.marks: list[dict[str, Any]] = []

    def mark(self, step: int, code: str, label: str) -> None:
        """Mark `step` on this table's chart (a finding's moment), kept whatever the stride."""
        if len(self.marks) < MAX_MARKS:
            self.marks.append({"step": int(step), "code": code, "label": label})

    def due(self, step: int) -> bool:
        """Whether a value for `step` would be kept (check it before computing one)."""
        return step % self.stride == 0 and (not self.steps or step >= self.steps[-1])

    def add(self, step: int, values: Mapping[str, Any]) -> None:
        """Set `values` (column -> number, or a device scalar read at the end) at `step`."""
        if not self.due(step):
            return
        if self.steps and self.steps[-1] == step:
            row = self.rows[-1]
        else:
            if len(self.rows) >= self.capacity:
                self._decimate()
                if not self.due(step):
                    return
            row = [None] * len(self.columns)
            self.steps.append(step)
            self.rows.append(row)
        for name, value in values.items():
            column = self._index.get(name)
            if column is None:
                column = self._index[name] = len(self.columns)
                self.columns.append(name)
                for other in self.rows:
                    other.append(None)
            row[column] = value

    def _decimate(self) -> None:
        self.stride *= 2
        kept = [(s, r) for s, r in zip(self.steps, self.rows) if s % self.stride == 0]
        self.steps = [s for s, _ in kept]
        self.rows = [r for _, r in kept]

    def to_dict(self, read_device: bool) -> dict[str, Any]:
        """The JSON form: `steps`, `columns`, `values` (one row per step; null where unknown).
        Device scalars are read only when `read_device` (at the end); otherwise null."""
        data: dict[str, Any] = {"kind": self.kind, "unit": self.unit, "stride": self.stride}
        if self.title:
            data["title"] = self.title
        data.update({"columns": list(self.columns), "steps": list(self.steps),
                     "values": [[_number(v, read_device) for v in row] for row in self.rows]})
        if self.marks:
            data["marks"] = [dict(mark) for mark in self.marks]
        return data


def _number(value: Any, read_device: bool) -> float | None:
    if isinstance(value, torch.Tensor):
        if not read_device and value.device.type != "cpu":
            return None
        value = float(value)
    if value is None or not math.isfinite(value):
        return None  # JSON has no NaN: a gap in the curve (the findings say why)
    return float(f"{value:.6g}")
