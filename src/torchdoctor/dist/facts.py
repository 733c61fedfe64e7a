"""What a preflight saw, per rank and for the job, as JSON-ready records.

Verdicts read only these records, so each one is proven on facts written by hand (a rule doc's
Example) as well as on facts from real processes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from torchdoctor.env.facts import from_dict
from torchdoctor.env.text import human_bytes


@dataclass(frozen=True)
class Collective:
    """One collective at one message size on one rank: did it finish, correctly, how fast."""

    op: str
    backend: str = "gloo"
    bytes: int = 0
    ok: bool = True
    problem: str | None = None  # "timeout", "wrong" or "error"
    detail: str | None = None
    seconds: float | None = None  # median time of one call

    @property
    def label(self) -> str:
        return f"{self.op} {human_bytes(self.bytes)} ({self.backend})" if self.op != "barrier" else f"barrier ({self.backend})"


@dataclass(frozen=True)
class RankFacts:
    """One process of the job, as it described itself (or as its launcher saw it end)."""

    rank: int
    hostname: str | None = None
    pid: int | None = None
    local_rank: int | None = None
    local_world_size: int | None = None
    world_size: int | None = None
    master: str | None = None  # MASTER_ADDR:MASTER_PORT as this rank has them
    torch: str | None = None
    cuda: str | None = None
    nccl: str | None = None
    python: str | None = None
    gpu_count: int | None = None
    device: str | None = None  # the GPU this rank would use (cuda:LOCAL_RANK): its UUID or name
    rng: str | None = None  # fingerprint of the default torch generator's state
    interfaces: list[str] = field(default_factory=list)
    socket_ifname: dict[str, str] = field(default_factory=dict)  # GLOO_/NCCL_SOCKET_IFNAME as set
    ready_seconds: float | None = None  # from the start of the preflight to this rank's torch being imported
    duplicates: int = 1  # processes that claimed this RANK
    connect: str | None = None  # why the store could not be reached: refused, timeout, unresolvable, in use, no answer
    store_error: str | None = None
    arrived: bool | None = None
    position: str | None = None  # the collective it was in when the preflight stopped
    last_completed: str | None = None
    collectives: list[Collective] = field(default_factory=list)
    error: str | None = None  # a failure outside collectives (process group set-up, a crash)
    exit: str | None = None  # how the process ended, when it did not end normally


@dataclass(frozen=True)
class DistFacts:
    mode: str = "launcher"  # "launcher" (one process per rank, started by torchrun, srun, ...) or "standalone"
    launch: dict[str, str] = field(default_factory=dict)  # RANK, WORLD_SIZE, MASTER_ADDR, ... of this process
    master_ips: list[str] = field(default_factory=list)  # what MASTER_ADDR resolves to here
    master_resolves: bool | None = None
    agent_store: bool = False  # the launcher (torchrun) hosts the store, not rank 0
    world_size: int | None = None
    timeout: float = 10.0  # of each collective
    rendezvous_timeout: float | None = None  # from the start (None: facts written before it existed: `timeout`)
    backends: list[str] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)  # ranks that never reached the store (rank 0's view)
    rendezvous_seconds: float | None = None
    #: how long rank 0 waited at most, from the start: the rendezvous timeout, or 3 s after its own
    #: torch import when that came later (a slow start on a busy machine is not a missing rank)
    rendezvous_deadline: float | None = None
    ranks: list[RankFacts] = field(default_factory=list)

    def rank(self, number: int) -> RankFacts | None:
        return next((r for r in self.ranks if r.rank == number), None)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def load(data: dict[str, Any]) -> DistFacts:
    return from_dict(DistFacts, data)
