"""`torchdoctor run` on a job of two nodes, simulated on this machine (see conftest.py): the
report of the node that holds global rank 0 covers the ranks of both; the other node writes its
own beside it. A healthy job and its buggy twin (replicas that diverge across the nodes), a rank
of the second node that makes the job hang, a node that never joins (torchrun's rendezvous; a
node started without torchdoctor), and a rank of the other node that dies."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.run.nodes.conftest import srun_tasks, two_nodes

pytestmark = pytest.mark.slow

TRAINING = """
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Linear(8, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range({steps}):
    x, y = torch.randn(16, 8) + dist.get_rank(), torch.randint(0, 4, (16,))  # each rank its own data
    optimizer.zero_grad()
    F.cross_entropy({forward}(x), y).backward()
    optimizer.step()
dist.barrier()
dist.destroy_process_group()
"""


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_replicas_that_diverge_across_nodes_are_one_finding_in_rank_0s_report(write) -> None:  # type: ignore[no-untyped-def]
    script = write("train.py", TRAINING.format(forward="model.module", steps=4))
    nodes = two_nodes(script, nproc=1)
    assert sorted(nodes.reports) == ["report.json", "report.node1.json"], nodes.stderr
    merged = nodes.merged
    (finding,) = merged["findings"]
    assert finding["rule"] == "TD460" and finding["line"] == line_of(script, "model.module(x)")
    assert finding["evidence"]["ranks"] == [0, 1]
    ranks = {p["rank"]: p for p in merged["meta"]["processes"] if p["role"] == "rank"}
    assert sorted(ranks) == [0, 1] and ranks[0].get("node") is None and ranks[1]["node"] is not None  # rank 1: the other node's
    assert ranks[1]["stats"]["steps"] == 4 and ranks[1]["host"]
    assert [n["ranks"] for n in merged["meta"]["nodes"]] == [[0], [1]]
    assert any(notice.startswith("the job ran on 2 nodes: ") for notice in merged["notices"])
    other = nodes.reports["report.node1.json"]  # the other node's report: its own rank only, and where the merged one is
    assert other["findings"] == [] and "the merged report is rank 0's node's" in other["meta"]["title"]
    assert any(n.startswith("this report covers this node's rank 1 (") for n in other["notices"]), other["notices"]
    assert sorted(nodes.returncodes) == [0, 1]


def test_srun_tasks_a_runner_per_rank_give_one_merged_report(write) -> None:  # type: ignore[no-untyped-def]
    """`srun torchdoctor run train.py`: no torchrun; rank 0's own process hosts the store."""
    script = write("train.py", TRAINING.format(forward="model.module", steps=4))
    tasks = srun_tasks(script)
    assert sorted(tasks.reports) == ["report.json", "report.rank1.json"], tasks.stderr
    (finding,) = tasks.merged["findings"]
    assert finding["rule"] == "TD460" and finding["evidence"]["ranks"] == [0, 1]
    assert [n["ranks"] for n in tasks.merged["meta"]["nodes"]] == [[0], [1]]
    assert not any("did not arrive" in n or "not observed" in n for n in tasks.merged["notices"]), tasks.merged["notices"]
    assert tasks.returncodes == [1, 0]  # the other task's report: its own rank, and where the merged one is


def test_the_correct_twin_through_a_shared_folder_gets_an_empty_report(write, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    shared = tmp_path / "shared"
    shared.mkdir()
    script = write("train.py", TRAINING.format(forward="model", steps=24))
    nodes = two_nodes(script, nproc=1, options=("--shared-dir", str(shared)))
    assert nodes.returncodes == [0, 0], nodes.stderr
    assert nodes.merged["findings"] == [] and nodes.reports["report.node1.json"]["findings"] == []
    assert sorted(p["rank"] for p in nodes.merged["meta"]["processes"] if p["role"] == "rank") == [0, 1]
    assert not any("did not arrive" in n or "not observed" in n for n in nodes.merged["notices"]), nodes.merged["notices"]
    assert any(shared.iterdir())  # the exchange went through the folder
    assert [row["rank"] for row in nodes.merged["meta"]["pace"]] == [0, 1]  # each rank's pace, from both nodes


HANG = """
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
total = torch.tensor([float(rank)])
dist.all_reduce(total)
if rank == {odd}:                  # a rank of one node logs its own metric
    dist.all_reduce(total)
dist.barrier()
dist.destroy_process_group()
"""


def test_a_hang_caused_by_a_rank_of_the_other_node_is_stopped_on_both_and_explained(write) -> None:  # type: ignore[no-untyped-def]
    script = write("hang.py", HANG.format(odd=2))
    nodes = two_nodes(script, nproc=2)
    merged = nodes.merged
    assert merged["meta"]["stopped"].startswith("every rank waited there until torchdoctor stopped the job")
    (finding,) = merged["findings"]
    assert finding["rule"] == "TD461" and finding["line"] == line_of(script, "dist.all_reduce(total)") + 2
    assert finding["evidence"]["ranks"] == [0, 1, 2, 3] and set(finding["evidence"]["hosts"]) == {"0", "1", "2", "3"}
    assert "ranks 0, 1, 3 call `barrier`" in finding["message"] and "rank 2 calls `all_reduce`" in finding["message"]
    assert "failed because another rank closed its connection" not in finding["message"]  # the stop's doing, not the job's
    other = nodes.reports["report.node1.json"]
    assert other["meta"].get("stopped") == merged["meta"]["stopped"]  # the other node followed rank 0's
    assert other["notices"][0].startswith("torchdoctor stopped the job: rank 0's node (") and "TD461 in the merged report" in other["notices"][0]
    assert nodes.returncodes[0] == 1 and nodes.returncodes[1] != 0  # the other node: its script's status (stopped)


def test_a_node_that_never_comes_to_torchruns_rendezvous(write) -> None:  # type: ignore[no-untyped-def]
    script = write("train.py", TRAINING.format(forward="model", steps=4))
    nodes = two_nodes(script, nproc=1, observed=(True,), conf=("join_timeout=4",))
    assert nodes.returncodes == [1]
    (finding,) = nodes.merged["findings"]
    assert finding["rule"] == "TD464" and finding["file"] is None
    assert "timed out after 4 s: this node" in finding["message"] and "waited for 2 nodes (--nnodes 2)" in finding["message"]


@pytest.mark.parametrize("observed", [(True, False), (False, True)], ids=["rank-0s-node", "the-other-node"])
def test_a_node_without_torchdoctor_is_named_as_not_observed(write, observed: tuple[bool, bool]) -> None:  # type: ignore[no-untyped-def]
    script = write("train.py", TRAINING.format(forward="model", steps=4))
    nodes = two_nodes(script, nproc=1, observed=observed, env={"TORCHDOCTOR_NODES_WAIT": "3"})
    assert nodes.returncodes == [0, 0], nodes.stderr
    (report,) = nodes.reports.values()
    assert report["findings"] == []
    mine = [p["rank"] for p in report["meta"]["processes"] if p["role"] == "rank"]
    assert mine == [observed.index(True)]
    assert report["meta"]["nodes"] == [{"host": report["meta"]["nodes"][0]["host"], "ranks": mine, "this": True, "slot": 1}]
    if mine == [0]:  # the merged report: the ranks nobody sent
        assert sorted(nodes.reports) == ["report.json"]
        assert ("rank 1 of the job was not observed: no node published its records through the job's store at "
                in "\n".join(report["notices"])), report["notices"]
    else:  # another node's: it never saw rank 0's node, whose report would have the job's other ranks
        assert sorted(nodes.reports) == ["report.node1.json"]
        assert any(n.startswith("this node never saw rank 0's node through the job's store at ")
                   and n.endswith(": this report covers only this node's rank 1, and rank 0's node may lack them")
                   for n in report["notices"]), report["notices"]
    assert not any(n.startswith("this node could not reach") for n in report["notices"])  # it did reach the store: nobody else was there


DIES = """
import json
import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
dist.barrier()
if rank == 1:
    # as in a job that runs for minutes before it dies: the nodes have exchanged their records
    # (a few seconds for the helper to start on a loaded machine; the test's, not the user's)
    status = os.path.join(os.environ["TORCHDOCTOR_RUN_DIR"], "nodes", "status.json")
    for _ in range(600):
        try:
            if json.load(open(status)).get("nodes"):
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    time.sleep(1)
    os._exit(9)                    # a rank of the other node dies (the out-of-memory killer, a segfault)
dist.barrier()
dist.destroy_process_group()
"""


def test_a_rank_of_the_other_node_that_dies_is_named_with_its_host(write) -> None:  # type: ignore[no-untyped-def]
    script = write("dies.py", DIES)
    nodes = two_nodes(script, nproc=1)
    merged = nodes.merged
    failed = [f for f in merged["findings"] if f["rule"] == "TD462"]
    assert failed and failed[0]["rank"] == 0 and failed[0]["line"] == line_of(script, "os._exit(9)") + 1
    assert "rank 1 on " in failed[0]["message"] and "its process had ended without its exit handlers" in failed[0]["message"], failed
