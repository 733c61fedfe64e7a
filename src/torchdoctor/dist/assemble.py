"""Turns the ranks' events into `DistFacts`: what each rank said about itself, and what rank 0
gathered about the others through the store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torchdoctor.dist.coordinator import RankProcess
from torchdoctor.dist.facts import Collective, DistFacts, RankFacts
from torchdoctor.env.facts import from_dict
from torchdoctor.env.redact import redact_text


def own_view(proc: RankProcess) -> dict[str, Any]:
    """The rank's facts from its own event stream, including how its process ended."""
    facts: dict[str, Any] = {"rank": proc.rank, "collectives": []}
    for event in proc.events:
        kind = event["ev"]
        if kind == "facts":
            facts.update(event["facts"])
        elif kind == "store_failed":
            facts.update(connect=event["connect"], store_error=event["error"], arrived=False)
        elif kind == "connected":
            facts["arrived"] = True
        elif kind == "duplicate":
            facts["duplicates"] = event["count"]
        elif kind == "enter":
            facts["position"] = event["label"]
        elif kind == "collective":
            result = {k: event[k] for k in ("op", "backend", "bytes", "ok", "problem", "detail", "seconds")}
            facts["collectives"].append(result)
            facts["position"] = None if result["problem"] is None else facts.get("position")
            if result["problem"] is None:
                facts["last_completed"] = from_dict(Collective, result).label
        elif kind == "error":
            facts["error"] = f"{event['stage']}: {event['error']}"
    if proc.killed is not None and not proc.done:
        facts["exit"] = proc.killed
    elif proc.process.returncode not in (0, None) and not proc.done:
        code = proc.process.returncode
        how = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
        tail = proc.stderr_tail()
        facts["exit"] = how + (f": {tail}" if tail else "")
    return facts


def job_events(proc: RankProcess) -> dict[str, Any]:
    """What rank 0 learnt about the job: who is missing, the backends, the other ranks."""
    job: dict[str, Any] = {}
    for event in proc.events:
        if event["ev"] == "rendezvous":
            job.update(missing=event["missing"], rendezvous_seconds=event["seconds"], backends=event["backends"],
                       rendezvous_deadline=event.get("deadline"))
        elif event["ev"] == "peers":
            job["peers"] = event["ranks"]
    return job


def assemble(base: DistFacts, processes: Sequence[RankProcess]) -> DistFacts:
    """Merge the streams (standalone: every rank's; launcher: this rank's) with rank 0's gathering."""
    ranks: dict[int, dict[str, Any]] = {proc.rank: own_view(proc) for proc in processes}
    job: dict[str, Any] = {}
    for proc in processes:
        if proc.rank == 0:
            job = job_events(proc)
    for peer in job.pop("peers", []):
        if peer["rank"] not in ranks:
            peer.setdefault("collectives", [])
            ranks[peer["rank"]] = peer
    missing = job.get("missing", [])
    for rank in missing:
        ranks.setdefault(rank, {"rank": rank, "arrived": False})
        ranks[rank]["arrived"] = False
    data = {**base.to_dict(), **job, "ranks": [_clean(ranks[r]) for r in sorted(ranks)]}
    return from_dict(DistFacts, data)


def _clean(facts: dict[str, Any]) -> dict[str, Any]:
    """Only the fields RankFacts knows (a newer worker may say more), with secrets masked."""
    known = set(RankFacts.__dataclass_fields__)
    return {k: (redact_text(v) if isinstance(v, str) else v) for k, v in facts.items() if k in known}
