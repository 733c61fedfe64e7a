"""The memory of a run over time: a cheap number every step, a census now and then.

Every step adds the cheap signals (resident memory on CPU; allocated, reserved and peak bytes
of each CUDA device). Long runs are thinned to at most MAX_POINTS steps (every other point
is dropped and the stride doubles), so the report stays small. Censuses (the account by
owner) are kept for the first steps and the most recent ones. `summary()` is the process's
part of the JSON report's `memory` section, which the HTML report plots.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from torchdoctor.observe.memory.census import Census
from torchdoctor.observe.memory.process import AllocatorFacts

#: steps kept in the per-step series at most
MAX_POINTS = 2_000
#: the most recent censuses kept (the first full ones are always kept)
RECENT = 8


class Timeline:
    """Per-step series and censuses of one process."""

    def __init__(self) -> None:
        self.steps: list[int] = []
        self.series: dict[str, list[int | None]] = {}
        self.stride = 1
        self.first: list[Census] = []
        self.recent: deque[Census] = deque(maxlen=RECENT)
        self.peaks: dict[str, dict[str, int]] = {}  # phase -> {"bytes", "step"}
        self.device = "cpu"
        self.rss_peak = 0

    def add(self, step: int, rss: int | None, allocators: list[AllocatorFacts]) -> None:
        if rss is not None:
            self.rss_peak = max(self.rss_peak, rss)
        if step % self.stride:
            return
        values: dict[str, int | None] = {"rss": rss}
        for facts in allocators:
            self.device = facts.device
            suffix = "" if facts.device == "cuda:0" else f"@{facts.device}"
            values[f"allocated{suffix}"] = facts.allocated
            values[f"reserved{suffix}"] = facts.reserved
            values[f"peak{suffix}"] = facts.peak
        for name in values.keys() - self.series.keys():
            self.series[name] = [None] * len(self.steps)
        self.steps.append(step)
        for name, column in self.series.items():
            column.append(values.get(name))
        if len(self.steps) > MAX_POINTS:
            self.stride *= 2
            keep = [i for i, s in enumerate(self.steps) if s % self.stride == 0]
            self.steps = [self.steps[i] for i in keep]
            self.series = {name: [column[i] for i in keep] for name, column in self.series.items()}

    def census(self, census: Census, full: bool) -> None:
        (self.first if full else self.recent).append(census)
        peak = self.peaks.get(census.phase)
        if peak is None or census.total > peak["bytes"]:
            self.peaks[census.phase] = {"bytes": census.total, "step": census.step}

    def device_peak(self, phase: str, nbytes: int, step: int) -> None:
        """A CUDA peak that rose during `phase`: the allocator's exact high-water mark."""
        known = self.peaks.get(f"{phase} (allocator)")
        if known is None or nbytes > known["bytes"]:
            self.peaks[f"{phase} (allocator)"] = {"bytes": nbytes, "step": step}

    @property
    def censuses(self) -> list[Census]:
        return [*self.first, *self.recent]

    @property
    def last(self) -> Census | None:
        if self.recent:
            return self.recent[-1]
        return self.first[-1] if self.first else None

    def summary(self) -> dict[str, Any]:
        last = self.last
        return {
            "device": self.device,
            "steps": list(self.steps),
            "series": {name: list(column) for name, column in self.series.items()},
            "stride": self.stride,
            "peak_rss": self.rss_peak or None,
            "peaks": {phase: dict(value) for phase, value in self.peaks.items()},
            "owners": dict(last.owners) if last is not None else {},
            "censuses": [census.to_dict() for census in self.censuses],
        }
