"""The preflight's stage lines: what they say must match the verdict beside them."""

from __future__ import annotations

import json
from typing import Any

from torchdoctor.core.report import Status
from torchdoctor.dist.facts import load
from torchdoctor.dist.summary import checks
from torchdoctor.dist.verdicts import judge_by_group


def rendezvous(arrived: bool = True, **data: Any):  # type: ignore[no-untyped-def]
    ranks = [{"rank": 0, "arrived": True, "ready_seconds": 3.3}, {"rank": 1, "arrived": arrived, "ready_seconds": 3.1}]
    facts = load(json.loads(json.dumps({"mode": "standalone", "world_size": 2, "ranks": ranks, **data})))
    return next(c for c in checks(facts, judge_by_group(facts)) if c.name == "rendezvous")


def test_a_join_within_the_timeout_says_the_timeout() -> None:
    line = rendezvous(rendezvous_timeout=6, rendezvous_seconds=1.2, rendezvous_deadline=6.0)
    assert line.status is Status.PASSED
    assert line.detail == "2/2 ranks joined 1.2 s after start through rank 0's TCPStore (timeout 6 s)"


def test_a_join_after_the_timeout_says_why_it_still_passed() -> None:
    """Every rank waits at least 3 s after importing torch, so a slow start on a busy machine is
    not read as a missing rank: a join after the nominal timeout but within that wait passes,
    and the line says so instead of "joined 5.1 s ... (timeout 5 s)"."""
    line = rendezvous(rendezvous_timeout=5, rendezvous_seconds=5.1, rendezvous_deadline=6.3)
    assert line.status is Status.PASSED
    assert line.detail == ("2/2 ranks joined 5.1 s after start through rank 0's TCPStore, within the 6.3 s rank 0 waited: "
                           "the 5 s timeout, extended to 3 s after rank 0 had imported torch at 3.3 s "
                           "(on a machine this slow to start, the other ranks may still be importing)")
    assert "(timeout 5 s)" not in line.detail


def test_a_missing_rank_is_said_with_how_long_rank_0_waited() -> None:
    line = rendezvous(arrived=False, missing=[1], rendezvous_timeout=5, rendezvous_seconds=6.3, rendezvous_deadline=6.3)
    assert line.status is Status.FAILED
    assert line.detail.startswith("1/2 ranks joined rank 0's TCPStore within the 6.3 s rank 0 waited: the 5 s timeout, extended")
    plain = rendezvous(arrived=False, missing=[1], rendezvous_timeout=6, rendezvous_seconds=6.0, rendezvous_deadline=6.0)
    assert plain.detail == "1/2 ranks joined rank 0's TCPStore within the 6 s timeout"
