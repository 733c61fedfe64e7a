"""TD497 across ranks (run/stalled_ranks.py): the rank that stalls on something other than a
collective is the rank behind; the ranks that wait for it in a collective are folded into its
finding. On findings as the ranks report them, and end to end: a DDP job where one rank reads
slowly once is told at that rank's line, naming the ranks it holds back; its twin is silent."""

from __future__ import annotations

from typing import Any

import pytest

from tests.run.conftest import torchdoctor_run
from torchdoctor.core.finding import Finding
from torchdoctor.rules.performance.training_stalled import RULE
from torchdoctor.run.stalled_ranks import stalled_rank_findings


def stall(rank: int | None, waits_on: str, line: int, *, collective: str | None = None, **extra: Any) -> Finding:
    evidence: dict[str, Any] = {"waited_s": 3.0, "steps": 10, "waits_on": waits_on, **extra}
    if collective:
        evidence["collective"] = collective
    return RULE.finding(file="/job/train.py", line=line, rank=rank, evidence=evidence,
                        fields={"waited": 3.0, "step": 10, "median": "5 ms", "where": f"the main thread waits at train.py:{line}",
                                "remedy": "r", "behind": ""})


def test_the_rank_that_waits_elsewhere_is_behind_and_the_waiting_ranks_are_folded_into_it() -> None:
    other = Finding(rule="TD100", name="x", category=RULE.category, severity=RULE.severity, message="m", hint="h")
    slow = stall(2, "call", 12)
    findings = [stall(None, "collective", 17, collective="`all_reduce`", ranks=[0, 1]), slow, other]
    (told, kept) = stalled_rank_findings(findings)
    assert kept is other
    assert told.rank == 2 and (told.file, told.line) == (slow.file, slow.line)
    assert told.message == slow.message + "; this rank is behind: ranks 0-1 wait for it in `all_reduce` at /job/train.py:17"
    assert told.evidence["holds_back"] == {  # type: ignore[index]
        "0": {"file": "/job/train.py", "line": 17, "collective": "`all_reduce`"},
        "1": {"file": "/job/train.py", "line": 17, "collective": "`all_reduce`"},
    }


def test_a_rank_waiting_for_a_dataloader_worker_is_behind_too() -> None:
    ddp = "DistributedDataParallel's gradient all-reduce in `backward()`"
    (told,) = stalled_rank_findings([stall(0, "collective", 21, collective=ddp), stall(1, "loader", 9)])
    assert told.rank == 1 and told.message.endswith(f"; this rank is behind: rank 0 waits for it in {ddp} at /job/train.py:21")


@pytest.mark.parametrize("findings", [
    [stall(0, "collective", 17, collective="`barrier`"), stall(1, "collective", 17, collective="`barrier`")],  # nobody behind stalled
    [stall(0, "call", 12)],  # one rank
    [stall(0, "io", 12), stall(1, "call", 12)],  # every rank slow on its own: nobody waits for another
    [stall(0, "collective", 17, collective="`all_reduce`"), RULE.finding(file="/job/train.py", line=3, fields={
        "waited": 1.0, "step": 1, "median": "1 ms", "where": "w", "remedy": "r", "behind": ""})],  # a stall of a single process
])
def test_nothing_to_fold(findings: list[Finding]) -> None:
    assert stalled_rank_findings(findings) == findings


SLOW_READ = """
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


def read_batch(step):
    if dist.get_rank() == {slow} and step == 12:
        time.sleep(6)  # a read that takes seconds, on one rank
    return torch.randn(32, 16), torch.randint(0, 4, (32,))


dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(30):
    x, y = read_batch(step)
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_a_ddp_job_stalled_by_one_rank_is_told_once_at_that_ranks_line(write) -> None:  # type: ignore[no-untyped-def]
    torchrun = ("-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2")
    script = write("slow_read.py", SLOW_READ.replace("{slow}", "1"))
    ran = torchdoctor_run(*torchrun, str(script), cwd=script.parent, options=("--stall-timeout", "1"))
    stalls = [f for f in ran.report["findings"] if f["rule"] == "TD497"]
    assert len(stalls) == 1, ran.report["findings"]
    (found,) = stalls
    assert found["rank"] == 1 and script.read_text().splitlines()[found["line"] - 1].strip().startswith("time.sleep(6)")
    backward = script.read_text().splitlines().index("    F.cross_entropy(model(x), y).backward()") + 1
    assert found["message"].endswith("; this rank is behind: rank 0 waits for it in DistributedDataParallel's gradient "
                                     f"all-reduce in `backward()` at slow_read.py:{backward}"), found["message"]
    twin = write("steady.py", SLOW_READ.replace("{slow}", "-1"))
    ran = torchdoctor_run(*torchrun, str(twin), cwd=twin.parent, options=("--stall-timeout", "1"))
    assert ran.report["findings"] == [], ran.report["findings"]
