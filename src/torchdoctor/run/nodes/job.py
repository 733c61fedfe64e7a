"""Where a rank stands in its job, as its own process sees it at `init_process_group`, and the
file names the exchange uses in a run folder.

A rank writes these facts into its collectives' state file (instruments/distributed.py); the
runner reads them to tell whether the job spans other runners, and where the job's store is.

No torch here.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchdoctor.run.records import ENV_PARENT

#: the sub-folder of a run folder that holds the exchange: its status and the other nodes' files
NODES = "nodes"
STATUS = "status.json"
CARD = "node.json"
#: written by the runner when its job has ended (the helper's last publication)
ENDED = "ended.json"
#: written by the runner of global rank 0's node when it stops a deadlocked job (the others follow)
STOPPING = "stopping.json"
#: seconds global rank 0 waits at its exit (and, on a shared folder, its node's helper after the
#: job) for the other nodes' last records
FINAL_WAIT = float(os.environ.get("TORCHDOCTOR_NODES_WAIT", "10"))


@dataclass(frozen=True)
class Launch:
    """A rank's view of its job: its host, the store it rendezvoused through, and its launcher's
    variables (torchrun's LOCAL_WORLD_SIZE, GROUP_RANK, TORCHELASTIC_*; SLURM's job id)."""

    host: str
    store: str | None  # host:port of the job's TCPStore (MASTER_ADDR:MASTER_PORT, or tcp:// init)
    local_world: int | None  # LOCAL_WORLD_SIZE: ranks on this node (torchrun, or set by hand)
    group_rank: int | None  # GROUP_RANK: this node's number (torchrun)
    run_id: str | None  # TORCHELASTIC_RUN_ID
    job: str | None  # SLURM_JOB_ID.SLURM_STEP_ID
    agent_store: bool  # the launcher's agent hosts the store (torchrun), not rank 0
    main: bool  # this rank is the runner's own child (`torchdoctor run train.py`, one rank per runner)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Launch:
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__})  # type: ignore[arg-type]

    def key(self) -> str:
        """A name for the job, the same on every node and different for the next job: the store's
        address (torchrun picks a new port for every launch), the run id and SLURM's job step."""
        parts = [self.run_id or "", self.store or "", self.job or ""]
        return re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(p for p in parts if p)) or "job"


def launch_facts(environ: Mapping[str, str], init_method: str | None = None) -> Launch:
    """This process's launch, read at `init_process_group` (no network: the host's own name)."""
    store = None
    if init_method and init_method.startswith("tcp://"):
        store = init_method[len("tcp://"):].split("?", 1)[0].split("/", 1)[0] or None
    elif environ.get("MASTER_ADDR") and environ.get("MASTER_PORT"):
        store = f"{environ['MASTER_ADDR']}:{environ['MASTER_PORT']}"
    parent = environ.get(ENV_PARENT, "")
    job = environ.get("SLURM_JOB_ID")
    if job and environ.get("SLURM_STEP_ID"):
        job += "." + environ["SLURM_STEP_ID"]
    return Launch(
        host=socket.gethostname(), store=store, local_world=_integer(environ.get("LOCAL_WORLD_SIZE")),
        group_rank=_integer(environ.get("GROUP_RANK")), run_id=environ.get("TORCHELASTIC_RUN_ID"), job=job,
        agent_store=environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True",
        main=parent.isdigit() and os.getppid() == int(parent),
    )


def _integer(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def surely_spans(launch: Launch, world: int) -> bool:
    """The launcher says so: fewer ranks on this node than in the job (torchrun's LOCAL_WORLD_SIZE),
    or this rank is the runner's only one (`srun torchdoctor run train.py`: a runner per rank)."""
    if world < 2:
        return False
    if launch.local_world is not None:
        return launch.local_world < world
    return launch.main


def split_store(address: str) -> tuple[str, int] | None:
    """"host:port" (or "[v6]:port") -> (host, port)."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    return (host, int(port)) if host and port.isdigit() else None


def nodes_folder(folder: Path) -> Path:
    return folder / NODES


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Atomically (a reader never sees half a file)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(data, default=str), encoding="utf-8")
    os.replace(temporary, path)


def local_states(folder: Path) -> list[dict[str, Any]]:
    """The collectives' state files of this node's ranks (their pid, rank, world and launch)."""
    found = []
    for path in folder.glob("c*.json"):
        data = read_json(path)
        if data is not None and isinstance(data.get("rank"), int) and isinstance(data.get("world"), int):
            found.append(data)
    return found
