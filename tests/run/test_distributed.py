"""Distributed jobs under `torchdoctor run`, with real gloo ranks on the CPU (2 ranks each):
findings merged across ranks, DistributedSampler without set_epoch, replicas that diverge,
collectives called in a different order (a hang stopped, a short timeout explained), and DDP's
unused parameters named. Both sides: the correct twin of each script stays silent."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.run.conftest import Ran, torchdoctor_run
from torchdoctor.run.launcher import alive

pytestmark = pytest.mark.slow

TORCHRUN = ("-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2")

DDP_TRAINING = """
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
torch.manual_seed(0)
data = TensorDataset(torch.randn(64, 8), torch.randint(0, 4, (64,)))
sampler = DistributedSampler(data)
loader = DataLoader(data, batch_size=8, sampler=sampler)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    {set_epoch}
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        logged = loss.detach().clone()
        dist.all_reduce(logged)
dist.barrier()
dist.destroy_process_group()
"""


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def run_job(script: Path, *args: str) -> Ran:
    return torchdoctor_run(*TORCHRUN, str(script), *args, cwd=script.parent)


def test_a_correct_ddp_job_gets_one_merged_warning_for_the_sampler_and_nothing_else(write) -> None:  # type: ignore[no-untyped-def]
    script = write("train.py", DDP_TRAINING.format(set_epoch="pass"))
    ran = run_job(script)
    assert ran.report["meta"]["exit_status"] == 0, ran.stderr
    (finding,) = ran.report["findings"]
    assert finding["rule"] == "TD141" and finding["line"] == line_of(script, "for x, y in loader")
    assert finding["evidence"]["ranks"] == [0, 1] and "rank" not in finding
    assert "[ranks 0, 1]" in ran.stderr
    assert sorted(p["rank"] for p in ran.report["meta"]["processes"] if p["role"] == "rank") == [0, 1]
    fixed = run_job(write("fixed.py", DDP_TRAINING.format(set_epoch="sampler.set_epoch(epoch)")))
    assert fixed.report["findings"] == [], fixed.report["findings"]


DIVERGING = """
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
wrapped = nn.parallel.DistributedDataParallel(nn.Linear(8, 4))
first = torch.optim.SGD(wrapped.parameters(), lr=0.1)
torch.manual_seed(rank)
by_hand = nn.Linear(8, 4)
second = torch.optim.SGD(by_hand.parameters(), lr=0.1)
x, y = torch.randn(16, 8) + rank, torch.randint(0, 4, (16,))
for step in range(3):
    first.zero_grad()
    F.cross_entropy(wrapped.module(x), y).backward()
    first.step()
    second.zero_grad()
    F.cross_entropy(by_hand(x), y).backward()
    for p in by_hand.parameters():
        dist.all_reduce(p.grad)
    second.step()
dist.destroy_process_group()
"""


LOCAL_SGD = """
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook import PostLocalSGDState, post_localSGD_hook

dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Linear(8, 4))
state = PostLocalSGDState(process_group=None, subgroup=dist.new_subgroups(group_size=1)[0], start_localSGD_iter=2)
model.register_comm_hook(state, post_localSGD_hook)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 8) + dist.get_rank(), torch.randint(0, 4, (16,))
for step in range(6):
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
# nothing keeps the ranks together after step 2: without a barrier, a rank that lags (a busy
# machine) can outlive the other by seconds and then abort at exit (SIGABRT, "terminate called
# without an active exception", torchrun's exit status 1), plain torchrun as much as under torchdoctor
dist.barrier()
dist.destroy_process_group()
"""


def test_replicas_that_diverge_name_the_parameter_step_and_cause(write) -> None:  # type: ignore[no-untyped-def]
    script = write("diverging.py", DIVERGING)
    ran = run_job(script)
    findings = sorted((f for f in ran.report["findings"] if f["rule"] == "TD460"), key=lambda f: f["line"])
    assert len(findings) == 2, ran.report["findings"]
    by_hand, bypass = findings
    assert bypass["line"] == line_of(script, "wrapped.module(x)")
    assert bypass["message"].startswith("parameter `weight` differs across ranks from optimizer step 1 on (its gradient, rank 1 vs rank 0)")
    assert by_hand["line"] == line_of(script, "second = torch.optim.SGD")
    assert "before the first optimizer step" in by_hand["message"] and "the ranks start from different weights" in by_hand["message"]
    assert f"diverging.py:{line_of(script, 'dist.all_reduce(p.grad)')}" in by_hand["message"]
    local_sgd = run_job(write("local_sgd.py", LOCAL_SGD))  # replicas that drift on purpose between averagings
    assert local_sgd.report["meta"]["exit_status"] == 0 and local_sgd.report["findings"] == []


ORDER = """
import sys
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def main(rank, store):
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    total = torch.ones(4)
    if rank == 0:
        dist.all_reduce(total)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(main, args=(sys.argv[1],), nprocs=2)
"""


def gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not alive(pid)


def test_a_job_deadlocked_by_a_collective_under_a_rank_condition_is_stopped_and_explained(write, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    script = write("order.py", ORDER)
    started = time.monotonic()
    ran = torchdoctor_run(str(script), str(tmp_path / "store"), cwd=tmp_path, timeout=90)
    assert time.monotonic() - started < 60  # gloo's own timeout is 30 minutes
    (finding,) = ran.report["findings"]
    assert finding["rule"] == "TD461" and finding["line"] == line_of(script, "dist.all_reduce(total)")
    assert finding["message"].startswith(
        f"the ranks call collectives in a different order: their 1st collective differs: rank 0 calls `all_reduce` (float32[4]) "
        f"at order.py:{finding['line']}, rank 1 calls `barrier` at order.py:{line_of(script, 'dist.barrier()')}; "
        "every rank waited there until torchdoctor stopped the job after"
    )
    assert ran.returncode == 1 and "stopped" in ran.report["meta"]
    assert all(gone(process["pid"]) for process in ran.report["meta"]["processes"])  # nothing of the job is left


TIMEOUT = """
import datetime
import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=5))
total = torch.ones(4)
if dist.get_rank() == 0:
    dist.all_reduce(total)
dist.barrier()
dist.destroy_process_group()
"""


def test_the_jobs_own_short_timeout_is_explained_by_the_order(write) -> None:  # type: ignore[no-untyped-def]
    script = write("timeout.py", TIMEOUT)
    ran = run_job(script)
    (finding,) = ran.report["findings"]
    assert finding["rule"] == "TD461" and finding["line"] == line_of(script, "dist.all_reduce(total)")
    assert "failed after waiting 5 s for the other ranks (the process group's timeout)" in finding["message"]
    assert "stopped" not in ran.report["meta"]


UNUSED = """
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.head = nn.Linear(8, 4)
        self.aux = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(Net(){options})
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
for step in range(3):
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
dist.destroy_process_group()
"""


def test_ddp_unused_parameters_are_named_before_and_when_ddp_raises(write) -> None:  # type: ignore[no-untyped-def]
    script = write("unused.py", UNUSED.format(options=""))
    ran = run_job(script)
    (finding,) = ran.report["findings"]  # the detector's finding and the crash's are one
    assert finding["rule"] == "TD463" and finding["line"] == line_of(script, "DistributedDataParallel(")
    assert "2 parameter(s) got no gradient in the first training step: `aux.weight`, `aux.bias`" in finding["message"]
    assert finding["evidence"]["ranks"] == [0, 1]
    static = run_job(write("static.py", UNUSED.format(options=", static_graph=True")))
    assert static.report["meta"]["exit_status"] == 0
    assert static.codes == {"TD120"}  # the layer that never runs is still worth a warning, DDP accepts it
