"""TD465: ranks that hold the others back (run/pace.py), on pace records as the ranks write them
(detectors/pace.py), and end to end: a rank that sleeps before each step is found, and the same
job without the sleep stays silent on a machine whose every core is busy."""

from __future__ import annotations

from typing import Any

import pytest

from tests.load import cpu_hog
from tests.run.conftest import torchdoctor_run
from torchdoctor.run.pace import straggler_findings, table


def pace(rank: int, own_ms: float, *, step_ms: float = 40.0, host: str = "node-a", steps: int = 64) -> dict[str, Any]:
    counted = steps - 4
    return {"type": "pace", "rank": rank, "host": host, "first": 4, "steps": steps, "wall": step_ms / 1000 * counted,
            "own": own_ms / 1000 * counted}


def test_one_slow_rank() -> None:
    (finding,) = straggler_findings([pace(0, 5), pace(1, 6), pace(2, 30), pace(3, 5)])
    assert finding.rule == "TD465" and finding.evidence["ranks"] == [2]  # type: ignore[index]
    assert finding.message.startswith("rank 2 spends 6.0x as long as the fastest ranks on the work of a step outside backward() "
                                      "and collectives (30 ms vs 5.0 ms per step, optimizer steps 4 to 64)")
    assert finding.file is None


def test_a_slow_node_is_named_whole() -> None:
    records = [pace(0, 5), pace(1, 5), pace(2, 30, host="node-b"), pace(3, 32, host="node-b")]
    (finding,) = straggler_findings(records)
    assert finding.message.startswith("ranks 2-3 (every rank on node-b) spend ")
    assert [row["host"] for row in table(records)] == ["node-a", "node-a", "node-b", "node-b"]


@pytest.mark.parametrize("records", [
    [pace(0, 5), pace(1, 9), pace(2, 12), pace(3, 7)],  # uneven, not 3x
    [pace(0, 0.2, step_ms=40), pace(1, 1.5, step_ms=40)],  # 7x, but 1.3 ms of a 40 ms step
    [pace(0, 5, steps=16), pace(1, 30, steps=16)],  # 12 steps counted: too few
    [pace(0, 5)],  # one rank
    [pace(0, 30, step_ms=34), pace(1, 4, step_ms=8), pace(2, 4, step_ms=8)],  # the others go on without waiting for it
    [pace(0, 30), pace(1, 31)],  # every rank as slow as the other
])
def test_no_straggler(records: list[dict[str, Any]]) -> None:
    assert straggler_findings(records) == []


def test_ranks_compared_over_the_steps_they_all_counted() -> None:
    records = [pace(0, 5, steps=32), pace(0, 5, steps=64), pace(1, 30, steps=32)]  # rank 1's later records did not come
    assert [row["steps"] for row in table(records)] == [[4, 32], [4, 32]]


PACED = """
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(40):
    if dist.get_rank() == {slow}:
        time.sleep(0.03)
    x, y = torch.randn(64, 64), torch.randint(0, 4, (64,))
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_a_slow_rank_is_found_and_its_twin_is_silent_on_a_busy_machine(write) -> None:  # type: ignore[no-untyped-def]
    torchrun = ("-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "3")
    slow = write("slow.py", PACED.format(slow=1))
    ran = torchdoctor_run(*torchrun, str(slow), cwd=slow.parent)
    assert [f["rule"] for f in ran.report["findings"]] == ["TD465"] and ran.report["findings"][0]["evidence"]["ranks"] == [1]
    even = write("even.py", PACED.format(slow=-1))
    with cpu_hog():
        ran = torchdoctor_run(*torchrun, str(even), cwd=even.parent)
    assert ran.report["findings"] == [], ran.report["findings"]
    assert len(ran.report["meta"]["pace"]) == 3


SAVES_AT_THE_END = """
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(24):
    x, y = torch.randn(32, 16), torch.randint(0, 4, (32,))
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
if dist.get_rank() == 0:
    time.sleep(2)                  # rank 0 saves the checkpoint once training is over
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_what_a_rank_does_after_its_last_step_is_not_its_pace(write) -> None:  # type: ignore[no-untyped-def]
    script = write("saves.py", SAVES_AT_THE_END)
    ran = torchdoctor_run("-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script), cwd=script.parent)
    assert ran.report["findings"] == [], ran.report["findings"]
    assert [row["steps"] for row in ran.report["meta"]["pace"]] == [[4, 24], [4, 24]]


VALIDATES_NOW_AND_THEN = """
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(40):
    x, y = torch.randn(32, 16), torch.randint(0, 4, (32,))
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
    if dist.get_rank() == 0 and step % 5 == 0:
        time.sleep(0.05)           # rank 0 validates and saves a checkpoint every 5 steps
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_work_one_rank_does_now_and_then_is_not_its_pace(write) -> None:  # type: ignore[no-untyped-def]
    """A rank's pace is the median of its steps: rank 0's periodic validation (a correct habit)
    is not a straggler; the test above shows that a rank slow at every step still is."""
    script = write("validates.py", VALIDATES_NOW_AND_THEN)
    ran = torchdoctor_run("-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script), cwd=script.parent)
    assert ran.report["findings"] == [], ran.report["findings"]
    assert len(ran.report["meta"]["pace"]) == 2
