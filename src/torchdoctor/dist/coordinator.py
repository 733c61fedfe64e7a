"""Starts the rank processes of a preflight, follows their events, and stops them when they hang.

In standalone mode (`torchdoctor dist --nproc N`) it starts N ranks on this machine; under a
launcher (`torchrun ... -m torchdoctor dist`) each launched process starts one rank, its own.
Either way the rank runs in a child process, so a hang or a crash inside torch.distributed
becomes a fact ("rank 1 was in all_reduce when it stopped"), never a hang of this process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from torchdoctor.dist.worker import FOLLOWER_MARGIN, PREFIX
from torchdoctor.env.redact import redact_text

#: seconds a rank may stay silent beyond the collective timeout before it is stopped
GRACE = 5.0
#: seconds the other ranks get to finish once rank 0 is done (it has gathered all it can)
AFTER_RANK0 = 1.0
#: seconds a rank may take to start and import torch before its first event (many ranks
#: importing torch at once on a loaded machine, or a cold network file system, are slow)
STARTUP = 60.0


@dataclass
class RankProcess:
    rank: int
    process: subprocess.Popen[str]
    stderr: Any
    events: list[dict[str, Any]] = field(default_factory=list)
    last_event: float = field(default_factory=time.time)
    killed: str | None = None

    @property
    def done(self) -> bool:
        return any(event["ev"] == "done" for event in self.events)

    def read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith(PREFIX):
                try:
                    import json

                    self.events.append(json.loads(line[len(PREFIX):]))
                except ValueError:
                    continue
                self.last_event = time.time()

    def stderr_tail(self) -> str | None:
        self.stderr.seek(0)
        lines = [line.strip() for line in self.stderr.read().decode(errors="replace").splitlines() if line.strip()]
        useful = [line for line in lines if not line.startswith(("frame #", "Exception raised from", "[W", "W1", "I1"))]
        return redact_text(useful[-1])[:400] if useful else None


@dataclass(frozen=True)
class Plan:
    """How to run the ranks: their environments, and the limits every wait obeys."""

    environments: Sequence[Mapping[str, str]]
    deadline: float
    rendezvous: float
    timeout: float
    sizes: Sequence[int]
    backend: str = "auto"
    hang_rank: int | None = None
    iterations: int = 5
    budget: float = 0.5

    def argv(self) -> list[str]:
        argv = [sys.executable, "-m", "torchdoctor.dist.worker", "--deadline", repr(self.deadline),
                "--rendezvous", repr(self.rendezvous), "--timeout", repr(self.timeout),
                "--sizes", ",".join(map(str, self.sizes)), "--backend", self.backend,
                "--iterations", str(self.iterations), "--budget", repr(self.budget)]
        if self.hang_rank is not None:
            argv += ["--hang-rank", str(self.hang_rank)]
        return argv


def run(plan: Plan) -> list[RankProcess]:
    """Run every rank to its end (or stop it); the returned processes hold their events."""
    ranks = [_start(plan, env) for env in plan.environments]
    readers = [threading.Thread(target=r.read, daemon=True) for r in ranks]
    for reader in readers:
        reader.start()
    rank0_done: float | None = None
    while any(r.process.poll() is None for r in ranks):
        now = time.time()
        for proc in ranks:
            if proc.process.poll() is not None:
                continue
            limit = max(plan.deadline + FOLLOWER_MARGIN + GRACE, proc.last_event + plan.timeout + GRACE)
            if rank0_done is not None and now > rank0_done + AFTER_RANK0:
                _stop(proc, "stopped after rank 0 had finished")
            elif not proc.events and now > proc.last_event + STARTUP:
                _stop(proc, f"stopped: it had not started (imported torch) after {STARTUP:.0f} s")
            elif proc.events and now > limit:
                _stop(proc, f"stopped: no progress for {now - proc.last_event:.0f} s")
        if rank0_done is None and any(r.rank == 0 and r.done for r in ranks) and len(ranks) > 1:
            rank0_done = now
        time.sleep(0.05)
    for reader in readers:
        reader.join(timeout=2)
    return ranks


def _start(plan: Plan, env: Mapping[str, str]) -> RankProcess:
    stderr = tempfile.TemporaryFile()
    process = subprocess.Popen(
        plan.argv(), stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL, text=True,
        env=dict(env), errors="replace",
    )
    return RankProcess(rank=int(env["RANK"]), process=process, stderr=stderr)


def _stop(proc: RankProcess, why: str) -> None:
    proc.killed = why
    proc.process.kill()
    proc.process.wait()


def standalone_environments(nproc: int, port: int, base: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """The variables torchrun would give N local ranks (without its agent store)."""
    base = dict(base if base is not None else os.environ)
    for name in ("TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RUN_ID", "GROUP_RANK"):
        base.pop(name, None)
    return [
        {**base, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc),
         "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "OMP_NUM_THREADS": base.get("OMP_NUM_THREADS", "1")}
        for rank in range(nproc)
    ]


def node_environments(nodes: int, node: int, host: str, port: int, *, nproc: int, base: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """The variables of this node's ranks in a job of `nodes` nodes of `nproc` ranks each (as
    torchrun's static rendezvous numbers them: node K holds ranks K*nproc to K*nproc+nproc-1)."""
    local = standalone_environments(nproc, port, base)
    for env in local:
        rank = node * nproc + int(env["LOCAL_RANK"])
        env.update(RANK=str(rank), WORLD_SIZE=str(nodes * nproc), MASTER_ADDR=host, GROUP_RANK=str(node))
    return local
