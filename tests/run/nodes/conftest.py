"""Two nodes on this machine: two runners, each starting a torchrun agent with `--nnodes 2` that
meets the other through a c10d rendezvous on 127.0.0.1 (gloo ranks on the CPU). Each runner has
its own run folder, as on two machines; they share only the job's store (or a `--shared-dir`),
as nodes do.

The first node hosts the rendezvous store and holds global rank 0, as the node named by the
endpoint usually does on a cluster: on one machine both agents match 127.0.0.1 and either could
bind the store, and torchrun numbers the nodes by their sorted descriptors (address_pid), so the
tests say which (`is_host`, `--local-addr`; checked on torch 2.13). Otherwise a test where the
second node's rank dies could see its agent take the store down with it, and rank 0 killed by
its own agent before it says why its collective failed."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests import children
from tests.run.conftest import environment
from torchdoctor.dist.launch import free_port

#: bounds every two-node job (one of these jobs takes 20-40 s on a loaded 2-core machine)
LIMIT = 240


@dataclass
class Nodes:
    """Both runners' exit statuses and output, and the report files they wrote."""

    returncodes: list[int]
    stderr: list[str]
    reports: dict[str, dict[str, Any]]  # file name -> JSON report

    @property
    def merged(self) -> dict[str, Any]:
        """The report of the node that held global rank 0 (its --output)."""
        return self.reports["report.json"]

    def codes(self, name: str = "report.json") -> list[str]:
        return [f["rule"] for f in self.reports[name]["findings"]]


#: each node's address in its rendezvous descriptor: sorted, the first node's comes first (global rank 0)
ADDRESSES = ("127.0.0.1", "localhost")


def torchrun(port: int, nproc: int, node: int, conf: tuple[str, ...] = ()) -> list[str]:
    settings = ",".join((f"is_host={int(node == 0)}", *conf))
    return ["-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", str(nproc), "--rdzv-backend", "c10d",
            "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", f"td{port}", "--rdzv-conf", settings,
            "--local-addr", ADDRESSES[node]]


def two_nodes(script: Path, *, nproc: int = 2, observed: tuple[bool, ...] = (True, True), options: tuple[str, ...] = (),
              conf: tuple[str, ...] = (), env: dict[str, str] | None = None) -> Nodes:
    """Start the nodes at once (node K under `torchdoctor run` when observed[K], else plain
    torchrun; a tuple of one starts one node only; `conf`: more --rdzv-conf settings) and wait for
    them. The reports are written to one folder, as on a shared file system: rank 0's node's
    report.json, another's beside it."""
    port = free_port()
    reports = Path(tempfile.mkdtemp(prefix="td-nodes-"))
    commands = []
    for node, watched in enumerate(observed):
        launch = torchrun(port, nproc, node, conf)
        command = [sys.executable, "-m", "torchdoctor", "run", "--output", str(reports / "report.json"), *options] if watched else [sys.executable]
        commands.append(([*command, *launch, str(script)], env or {}))
    return run_all(script.parent, commands, reports)


def srun_tasks(script: Path, count: int = 2) -> Nodes:
    """`srun torchdoctor run train.py` on `count` nodes, one task each: a runner per rank, whose
    script reads the variables an sbatch file sets from SLURM's (RANK from SLURM_PROCID, ...) and
    whose rank 0 hosts the store itself (`init_process_group` with env://)."""
    port = free_port()
    reports = Path(tempfile.mkdtemp(prefix="td-tasks-"))
    slurm = {"SLURM_JOB_ID": str(port), "SLURM_STEP_ID": "0", "SLURM_NTASKS": str(count), "SLURM_STEP_NUM_TASKS": str(count),
             "SLURM_NNODES": str(count), "SLURM_STEP_TASKS_PER_NODE": f"1(x{count})", "SLURM_LOCALID": "0",
             "WORLD_SIZE": str(count), "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    command = [sys.executable, "-m", "torchdoctor", "run", "--output", str(reports / "report.json"), str(script)]
    tasks = [(command, {**slurm, "SLURM_PROCID": str(k), "SLURM_NODEID": str(k), "RANK": str(k)}) for k in range(count)]
    return run_all(script.parent, tasks, reports)


def run_all(folder: Path, commands: list[tuple[list[str], dict[str, str]]], reports: Path) -> Nodes:
    """Start every command at once (each with its own variables), wait for all, read the reports."""
    started = [(command, subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          env={**environment(), **env})) for command, env in commands]
    returncodes, errors = [], []
    for command, process in started:
        try:
            stdout, stderr = process.communicate(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            for _, other in started:
                other.kill()
            stdout, stderr = process.communicate()
            children.remember(command, None, stdout, stderr)
            raise
        children.remember(command, process.returncode, stdout, stderr)
        returncodes.append(process.returncode)
        errors.append(stderr)
    return Nodes(returncodes, errors, {p.name: json.loads(p.read_text()) for p in reports.glob("*.json")})
