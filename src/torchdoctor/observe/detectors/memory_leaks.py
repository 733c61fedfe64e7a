"""TD440: memory that grows step after step, with the holder named.

Each census (observe/detectors/memory_account.py) groups the tensors the user's code can reach by
what holds them (observe/memory/census.py). A holder is a leak when, over the last POINTS censuses
after the first steps, what makes it one grows at every census, at a steady rate:
- `graph`: tensors that carry their autograd graph (a list of losses or outputs, a cache of
  embeddings computed with autograd on, a module attribute or a hook's closure collecting
  outputs);
- `view`: small views that keep much larger storages alive (`images[0]` of every batch);
- `traceback`: exceptions whose tracebacks keep frames, and their tensors, alive;
- `chain`: one tensor rebound from itself every step without `.detach()`, whose graph (and the
  activations it saved) reaches back to the first step.
Detached tensors that accumulate (a replay buffer, a bounded cache, collected predictions) are
not leaks, whatever their growth. A leak TD147 or TD148 already reported at the same place
gets the measured numbers added to that finding instead of a second one.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.core.wording import listing, size_text
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.memory import holders, paths
from torchdoctor.observe.memory.census import Census, Holder
from torchdoctor.observe.memory.state import FULL_STEPS, MemoryState
from torchdoctor.rules.memory.loss_accumulated_with_history import RULE as LOSS_HISTORY
from torchdoctor.rules.memory.memory_leak import MEASURED
from torchdoctor.rules.memory.memory_leak import RULE as LEAK
from torchdoctor.rules.memory.retain_graph_in_loop import RULE as RETAIN_GRAPH

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: consecutive censuses over which a holder must grow (3 intervals)
POINTS = 4
#: the fastest and slowest growth per step of those intervals may differ by this factor at most
STEADY = 4.0


@dataclass(frozen=True)
class Snapshot:
    """What a holder held at one census."""

    step: int
    tensors: int
    graphs: int
    views: int
    view_bytes: int
    bytes: int
    graph_bytes: int
    own_bytes: int
    length: int | None
    traceback: bool
    kind: str

    @property
    def total(self) -> int:
        return self.bytes + self.graph_bytes


@dataclass
class Tracked:
    path: paths.Path
    snapshots: deque[Snapshot] = field(default_factory=lambda: deque(maxlen=POINTS))
    frame_variables: set[str] = field(default_factory=set)


class MemoryLeaks(Detector):
    """TD440 (see the module's doc)."""

    ORDER = 390
    rules = (LEAK,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._tracked: dict[str, Tracked] = {}
        self._reported: set[str] = set()

    def install(self) -> None:
        self.ctx.instrument(MemoryState).listeners.append(self._census)

    def _census(self, census: Census) -> None:
        if census.phase != "step" or census.step < FULL_STEPS:
            return
        for key in [key for key in self._tracked if key not in census.holders]:
            del self._tracked[key]  # gone, or emptied: any growth starts again
        for key, holder in census.holders.items():
            if key in self._reported or not (holder.tensors or holder.kind):
                continue  # an empty collection is followed too: its growth starts from nothing
            tracked = self._tracked.get(key)
            if tracked is None:
                tracked = self._tracked[key] = Tracked(holder.path)
            tracked.frame_variables |= holder.frame_variables
            snapshot = _snapshot(census.step, holder)
            if tracked.snapshots and tracked.snapshots[-1].step >= census.step:
                tracked.snapshots.pop()
            tracked.snapshots.append(snapshot)
            kind = leak_kind(list(tracked.snapshots))
            if kind is not None:
                self._reported.add(key)
                self._report(tracked, kind, census)

    def _report(self, tracked: Tracked, kind: str, census: Census) -> None:
        snapshots = list(tracked.snapshots)
        last, first = snapshots[-1], snapshots[0]
        steps = last.step - first.step
        path = tracked.path
        found = holders.sites(path, rebinding=kind == "chain")
        if kind == "chain" and found.filled is None:
            path, found = _carried(path, census) or (path, found)
        name = holders.describe(path, last.kind, found)
        variant, facts = _measured(kind, last, first, steps, tracked)
        evidence = {
            "holder": paths.render(path),
            "kind": kind,
            "steps": [s.step for s in snapshots],
            "bytes": [s.total for s in snapshots],
            "tensors": [s.tensors for s in snapshots],
            "bytes_per_step": round((last.total - first.total) / max(steps, 1)),
        }
        if self._amended(kind, found, MEASURED[variant].format(holder=name, **facts), evidence):
            return
        at = found.filled or found.created or caller_in_user_code()
        self.ctx.report(LEAK, at=at, key=paths.render(path), variant=variant,
                        fields={"holder": name, "name": paths.render(path)} | facts, evidence=evidence)

    def _amended(self, kind: str, found: holders.Sites, measured: str, evidence: dict[str, Any]) -> bool:
        """The same leak, already reported by TD147 (at the line that fills the holder) or
        TD148 (a graph chained across steps): add the numbers to that finding."""
        candidates = []
        if kind == "graph" and found.filled is not None:
            candidates = [f for f in self.ctx.findings_of(LOSS_HISTORY) if (f.file, f.line) == found.filled]
        elif kind == "chain":
            candidates = self.ctx.findings_of(RETAIN_GRAPH)
        if not candidates:
            return False
        finding = candidates[0]
        self.ctx.amend(finding, message=finding.message + measured, evidence={**(finding.evidence or {}), "memory": evidence})
        return True


def _carried(path: paths.Path, census: Census) -> tuple[paths.Path, holders.Sites] | None:
    """The variable that carries a chained graph. The census counts a graph shared by several
    variables for the first one it meets (`loss`, whose graph reaches back through `context`):
    the one to `.detach()` is the variable of the same function the code rebinds from itself."""
    frame = path[0].where if path else None
    for holder in census.holders.values():
        candidate = holder.path
        if holder.kind or not holder.graphs or len(candidate) != 1 or candidate[0].where != frame:
            continue
        found = holders.sites(candidate, rebinding=True)
        if found.filled is not None:
            return candidate, found
    return None


def _snapshot(step: int, holder: Holder) -> Snapshot:
    return Snapshot(step, holder.tensors, holder.graphs, holder.views, holder.view_bytes, holder.bytes,
                    holder.graph_bytes, holder.own_bytes, holder.length, holder.traceback, holder.kind)


def leak_kind(snapshots: list[Snapshot]) -> str | None:
    """Which leak these censuses of one holder show, if any (see the module's doc)."""
    if len(snapshots) < POINTS:
        return None
    last = snapshots[-1]
    if last.traceback and _grows(snapshots, lambda s: s.total):
        return "traceback"
    if last.views and _grows(snapshots, lambda s: s.view_bytes):
        return "view"
    if not last.kind and last.graphs == 1 and _grows(snapshots, lambda s: s.graph_bytes):
        return "chain"
    if last.graphs and _grows(snapshots, lambda s: s.graphs):
        return "graph"
    return None


def _grows(snapshots: list[Snapshot], metric: Any) -> bool:
    """Strictly more at every census, at a steady rate per step."""
    rates = []
    for before, after in zip(snapshots, snapshots[1:]):
        gained = metric(after) - metric(before)
        if gained <= 0 or after.step <= before.step:
            return False
        rates.append(gained / (after.step - before.step))
    return max(rates) <= STEADY * min(rates)


def _measured(kind: str, last: Snapshot, first: Snapshot, steps: int, tracked: Tracked) -> tuple[str, dict[str, Any]]:
    """TD440's variant for this kind of leak (a key of its HOLDS), and the numbers it names."""
    per_step = size_text((last.total - first.total) / max(steps, 1))
    if kind == "view":
        return "views", {"views": last.views, "data": size_text(last.own_bytes), "view_bytes": size_text(last.view_bytes),
                         "views_per_step": size_text((last.view_bytes - first.view_bytes) / max(steps, 1))}
    if kind == "traceback":
        facts = {"exceptions": last.length if last.length is not None else last.tensors, "total": size_text(last.total),
                 "per_step": per_step}
        if not tracked.frame_variables:
            return "tracebacks-unnamed", facts
        return "tracebacks", facts | {"variables": listing(sorted(tracked.frame_variables), 3)}
    if kind == "chain":
        return "chain", {"graph_bytes": size_text(last.graph_bytes), "per_step": per_step}
    if last.graph_bytes:
        return "graphs-saved", {"tensors": last.graphs, "total": size_text(last.total), "graph_bytes": size_text(last.graph_bytes),
                                "per_step": per_step}
    graphs_per_step = (last.graphs - first.graphs) / max(steps, 1)
    rate = f"{graphs_per_step:.0f}" if graphs_per_step >= 1 else f"{graphs_per_step:.2f}"
    return "graphs", {"tensors": last.graphs, "bytes": size_text(last.bytes), "rate": rate}
