"""TD465: ranks that hold the others back, from the pace records every rank writes
(detectors/pace.py): per rank, the seconds a step spends outside backward() and collectives.

The ranks are compared over the same optimizer steps (from the 4th to the last step every rank
wrote), at least MIN_STEPS of them. A rank is a straggler when its own work per step takes at
least RATIO times as long (the median over its steps: occasional work, such as rank 0 validating
every few hundred steps, is no pace) as that of the fastest half of the ranks, and longer by at least SHARE
of a step and FLOOR seconds: a margin that the noise of a busy machine (ranks descheduled now and
then, on every rank alike) does not reach, and a slow rank that costs the job little is not
worth a warning. And the others must wait for it: their steps take at least WAITED of its own
(ranks that never synchronise, such as replicas whose gradients are not averaged, each go at their
own pace and hold nobody back).

No torch here.
"""

from __future__ import annotations

import statistics
from typing import Any

from torchdoctor.core.finding import Finding
from torchdoctor.core.wording import ranks_named
from torchdoctor.rules.distributed.straggler_ranks import RULE as STRAGGLERS

MIN_STEPS = 16
RATIO = 3.0
SHARE = 0.2
FLOOR = 0.002
WAITED = 0.5


def table(shared: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per rank, over the steps every rank counted: seconds per step, and the rank's own part of them."""
    by_rank: dict[int, dict[int, dict[str, Any]]] = {}
    for record in shared:
        if record.get("type") == "pace" and isinstance(record.get("rank"), int) and isinstance(record.get("steps"), int):
            by_rank.setdefault(record["rank"], {})[record["steps"]] = record
    common = set.intersection(*(set(records) for records in by_rank.values())) if len(by_rank) > 1 else set()
    if not common:
        return []
    last = max(common)
    first = by_rank[min(by_rank)][last].get("first", 4)  # every rank counts from the end of this step
    if last - first < MIN_STEPS:
        return []
    return [
        {"rank": rank, "host": records[last].get("host"), "steps": [first, last],
         "step_seconds": records[last]["wall"] / (last - first),
         "own_seconds": records[last].get("own_median", records[last]["own"] / (last - first))}
        for rank, records in sorted(by_rank.items())
    ]


def straggler_findings(shared: list[dict[str, Any]]) -> list[Finding]:
    rows = table(shared)
    if not rows:
        return []
    own = sorted(row["own_seconds"] for row in rows)
    fast = max(statistics.median(own[: max(1, len(own) // 2)]), 1e-6)
    step = statistics.median(row["step_seconds"] for row in rows)
    slow = [row for row in rows if row["own_seconds"] >= RATIO * fast and row["own_seconds"] - fast >= max(SHARE * step, FLOOR)]
    others = [row["step_seconds"] for row in rows if row not in slow]
    if not slow or not others or statistics.median(others) < WAITED * min(row["step_seconds"] for row in slow):
        return []
    ranks = [row["rank"] for row in slow]
    hosts = sorted({row["host"] for row in slow if row["host"]})
    everywhere = {row["host"] for row in rows}
    who = ranks_named(ranks)
    if len(everywhere) > 1 and hosts:  # a job on several nodes: say which
        whole = [host for host in hosts if all(row in slow for row in rows if row["host"] == host)]
        who += " (" + "; ".join(f"every rank on {host}" if host in whole else f"on {host}" for host in hosts) + ")"
    first, last = slow[0]["steps"]
    several = len(ranks) > 1
    return [STRAGGLERS.finding(
        fields={"who": who, "spend": "spend" if several else "spends", "do": "do" if several else "does",
                "them": "them" if several else "it",
                "ratio": statistics.median(row["own_seconds"] for row in slow) / fast,
                "slow": _ms(statistics.median(row["own_seconds"] for row in slow)), "fast": _ms(fast),
                "step": _ms(step), "first": first, "last": last}, evidence={"ranks": ranks, "pace": rows},
    )]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds >= 0.0095 else f"{seconds * 1000:.1f} ms"
