"""TD497 across ranks: which rank is behind.

Each rank's watchdog reports its own stall (detectors/stalls.py) and says what its main thread
waits on (the evidence's `waits_on`). In a job where one rank is slow to read its data, every
other rank soon waits for it in a collective (its own, or DistributedDataParallel's gradient
all-reduce in `backward()`), and so every rank reports a stall. Only the rank that waits on
something else is behind: the runner keeps its finding, says which ranks it holds back and where
they wait, and folds theirs into it, so that the job's stall is told once, at the line that
holds it.

No torch here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from torchdoctor.core.finding import Finding
from torchdoctor.core.locate import display_path
from torchdoctor.core.wording import ranks_named
from torchdoctor.rules.performance.training_stalled import HOLDS_BACK
from torchdoctor.rules.performance.training_stalled import RULE as STALLED


def stalled_rank_findings(findings: list[Finding]) -> list[Finding]:
    """The findings with each rank's stall in a collective folded into the stall of the rank
    it waits for (when exactly the ranks that do not wait in a collective stalled too)."""
    stalls = [f for f in findings if f.rule == STALLED.code and _ranks(f)]
    waiting = [f for f in stalls if _evidence(f).get("waits_on") == "collective"]
    behind = [f for f in stalls if _evidence(f).get("waits_on") not in (None, "collective")]
    if not waiting or not behind:
        return findings
    told = {id(f): _holds_back(f, waiting) for f in behind}
    folded = {id(f) for f in waiting}
    return [told.get(id(f), f) for f in findings if id(f) not in folded]


def _holds_back(finding: Finding, waiting: list[Finding]) -> Finding:
    ranks = sorted({rank for f in waiting for rank in _ranks(f)})
    first = min(waiting, key=lambda f: min(_ranks(f)))
    sites = {(f.file, f.line) for f in waiting}
    where = ("" if first.file else "-unplaced") + ("-elsewhere" if len(sites) > 1 else "")
    collectives = {str(_evidence(f).get("collective", "a collective")) for f in waiting}
    added = HOLDS_BACK[("rank" if len(ranks) == 1 else "ranks") + where].format(
        ranks=ranks_named(ranks), collective=" or ".join(sorted(collectives)),
        **({"line": f"{display_path(first.file)}:{first.line}"} if first.file else {}))
    held = {str(rank): {"file": f.file, "line": f.line, "collective": _evidence(f).get("collective")}
            for f in waiting for rank in sorted(_ranks(f))}
    evidence = {**_evidence(finding), "holds_back": dict(sorted(held.items(), key=lambda item: int(item[0])))}
    return replace(finding, message=finding.message + added, evidence=evidence)


def _ranks(finding: Finding) -> set[int]:
    """The ranks that reported it (one, or those of identical findings merged into one)."""
    if finding.rank is not None:
        return {finding.rank}
    return {rank for rank in _evidence(finding).get("ranks") or () if isinstance(rank, int)}


def _evidence(finding: Finding) -> dict[str, Any]:
    return finding.evidence or {}
