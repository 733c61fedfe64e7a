"""`torchdoctor run --profile-self`: what each detector and each of the session's own event
handlers costs the observed process, in CPU time of the thread that runs them.

Why: observing must stay cheap on short steps, and the cost of a new detector must be seen
when it lands, not found later in a slow run. Timing is on only with the option: off, the
session pays one `is None` test per detector call. Times are exclusive: a session handler's
row does not count the detectors it called, so the rows add up to the observer's total (the
instruments' stand-ins around torch's own calls are not timed). No torch here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")

#: the config key (run folder's config.json) that turns timing on in every observed process
CONFIG_KEY = "profile_self"
#: the phases a row is counted in
WARMUP, STEADY = "warm-up", "after"


class SelfCost:
    """Calls and CPU nanoseconds per (owner, hook, phase), exclusive of nested timed calls;
    `phase()` says whether the session is in its warm-up (close observation) or past it."""

    def __init__(self, phase: Callable[[], str]) -> None:
        self._phase = phase
        self._rows: dict[tuple[str, str, str], list[int]] = {}  # -> [calls, exclusive ns]
        self._nested: list[int] = []  # per open timed call: the ns its nested timed calls took

    def timed(self, owner: str, hook: str, function: Callable[..., T], *args: Any) -> T:
        """`function(*args)`, its CPU time counted for (owner, hook)."""
        key = (owner, hook, self._phase())
        self._nested.append(0)
        started = time.thread_time_ns()
        try:
            return function(*args)
        finally:
            elapsed = time.thread_time_ns() - started
            inner = self._nested.pop()
            if self._nested:
                self._nested[-1] += elapsed
            row = self._rows.get(key)
            if row is None:
                row = self._rows[key] = [0, 0]
            row[0] += 1
            row[1] += elapsed - inner

    def wrap(self, owner: str, hook: str, function: Callable[..., T]) -> Callable[..., T]:
        """`function`, timed on every call (for callbacks handed to the instruments)."""

        def timed(*args: Any) -> T:
            return self.timed(owner, hook, function, *args)

        return timed

    def rows(self) -> list[dict[str, Any]]:
        """One row per (owner, hook, phase), for the process's summary record."""
        return [{"owner": owner, "hook": hook, "phase": phase, "calls": calls, "ns": ns}
                for (owner, hook, phase), (calls, ns) in self._rows.items()]


def merged(processes: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of every process's summary, summed per (owner, hook, phase), costliest first."""
    total: dict[tuple[str, str, str], list[int]] = {}
    for process in processes:
        for row in process.get("self_cost") or ():
            try:
                key = (str(row["owner"]), str(row["hook"]), str(row["phase"]))
                calls, ns = int(row["calls"]), int(row["ns"])
            except (KeyError, TypeError, ValueError):
                continue
            sums = total.setdefault(key, [0, 0])
            sums[0] += calls
            sums[1] += ns
    rows = [{"owner": owner, "hook": hook, "phase": phase, "calls": calls, "cpu_ms": round(ns / 1e6, 3),
             "us_per_call": round(ns / 1e3 / calls, 2) if calls else 0.0}
            for (owner, hook, phase), (calls, ns) in total.items()]
    return sorted(rows, key=lambda row: -row["cpu_ms"])


def table(rows: list[dict[str, Any]], steps: int) -> str:
    """The text table `--profile-self` prints: per owner (warm-up, after it, per step after
    it), then every (owner, hook, phase) row."""
    if not rows:
        return "profile-self: no observed process imported torch, so nothing was timed"
    owners: dict[str, list[float]] = {}
    for row in rows:
        owners.setdefault(row["owner"], [0.0, 0.0])[row["phase"] != WARMUP] += row["cpu_ms"]
    total = sum(sum(ms) for ms in owners.values())
    lines = [f"profile-self: CPU time in torchdoctor's detectors and event handlers: {total:.1f} ms over {steps} optimizer steps",
             f"  {'owner':<28} {'warm-up ms':>10} {'after ms':>9} {'after us/step':>13}"]
    for owner, (warm, after) in sorted(owners.items(), key=lambda item: -sum(item[1])):
        lines.append(f"  {owner:<28} {warm:>10.2f} {after:>9.2f} {(f'{after * 1e3 / steps:.1f}' if steps else '-'):>13}")
    lines.append(f"  {'owner.hook (phase)':<48} {'calls':>8} {'cpu ms':>9} {'us/call':>9}")
    for row in rows:
        name = f"{row['owner']}.{row['hook']} ({row['phase']})"
        lines.append(f"  {name:<48} {row['calls']:>8} {row['cpu_ms']:>9.2f} {row['us_per_call']:>9.2f}")
    return "\n".join(lines)
