"""SLURM's variables, as `torchdoctor dist` under `srun` reads them.

srun starts one process per task and tells each where it stands (SLURM_PROCID, SLURM_LOCALID,
SLURM_STEP_NUM_TASKS, SLURM_STEP_TASKS_PER_NODE, the node list), but torch.distributed reads
none of them: a script (or the sbatch file) maps them to RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR and MASTER_PORT, or torchrun runs once per node. The preflight fills the variables
that are not set from SLURM's, as such a script would, and checks the usual mistakes against
them (verdicts.py: a MASTER_ADDR that is not a node of the job; task counts that disagree
with the ranks torch is told about).

No torch here; nothing is asked of SLURM (no scontrol): the variables say it all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

VARIABLES = (
    "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS",
    "SLURM_NNODES", "SLURM_JOB_NODELIST", "SLURM_STEP_NODELIST", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
    "SLURM_STEP_TASKS_PER_NODE",
)
#: MASTER_PORT when the job does not set one: a port from the job id, the same on every task
PORT_BASE = 15000


def in_step(environ: Mapping[str, str]) -> bool:
    """This process is a task of an srun step (sbatch alone does not set SLURM_STEP_NUM_TASKS)."""
    return "SLURM_PROCID" in environ and "SLURM_STEP_NUM_TASKS" in environ


def expand_hostlist(text: str) -> list[str]:
    """SLURM's compressed host list: "gpu[01-03,07],login-a" -> gpu01, gpu02, gpu03, gpu07, login-a
    (several bracket groups in one name multiply: "r[1-2]n[1-2]" -> r1n1, r1n2, r2n1, r2n2)."""
    names: list[str] = []
    for item in re.findall(r"(?:[^,\[]|\[[^\]]*\])+", text):
        expanded = [""]
        for literal, ranges in re.findall(r"([^\[]*)(?:\[([^\]]*)\])?", item):
            expanded = [prefix + literal for prefix in expanded]
            if ranges:
                expanded = [prefix + value for prefix in expanded for value in _ranges(ranges)]
        names += [name for name in expanded if name]
    return names


def _ranges(text: str) -> list[str]:
    values = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        if not high:
            values.append(low)
            continue
        width = len(low) if low.startswith("0") else 0
        values += [str(n).zfill(width) for n in range(int(low), int(high) + 1)]
    return values


def tasks_per_node(text: str) -> list[int]:
    """SLURM_TASKS_PER_NODE's "2(x3),1" -> [2, 2, 2, 1]."""
    counts: list[int] = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if match is None:
            return []
        counts += [int(match[1])] * int(match[2] or 1)
    return counts


def nodes(environ: Mapping[str, str]) -> list[str]:
    """The step's nodes (or the job's), in SLURM's order: the first is where task 0 runs."""
    text = environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST")
    return expand_hostlist(text) if text else []


def tasks_here(environ: Mapping[str, str]) -> int | None:
    """How many tasks of the step run on this node."""
    counts = tasks_per_node(environ.get("SLURM_STEP_TASKS_PER_NODE") or environ.get("SLURM_TASKS_PER_NODE") or "")
    node = environ.get("SLURM_NODEID", "")
    return counts[int(node)] if node.isdigit() and int(node) < len(counts) else None


def with_launch(environ: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The environment with the launch variables an srun task lacks filled from SLURM's, and
    the names filled. Outside an srun step, or under torchrun (which sets its own), unchanged."""
    filled = dict(environ)
    if not in_step(environ) or "TORCHELASTIC_RUN_ID" in environ:
        return filled, []
    here = tasks_here(environ)
    first = next(iter(nodes(environ)), None)
    job = environ.get("SLURM_JOB_ID", "")
    values = {
        "RANK": environ.get("SLURM_PROCID"), "WORLD_SIZE": environ.get("SLURM_STEP_NUM_TASKS"),
        "LOCAL_RANK": environ.get("SLURM_LOCALID"), "LOCAL_WORLD_SIZE": str(here) if here else None,
        "MASTER_ADDR": first, "MASTER_PORT": str(PORT_BASE + int(job[-4:])) if job[-4:].isdigit() else None,
    }
    names = [name for name, value in values.items() if name not in environ and value is not None]
    filled.update({name: values[name] for name in names})  # type: ignore[misc]
    return filled, names
