"""The runner reading another node's files (sent by the helper, see test_mirror.py): the ranks'
states with their host and liveness from that node's card, the hang watch led by rank 0's node,
the records and what the report says about the nodes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.run.test_ranks import DEAD, rank_state
from torchdoctor.core.report import Report
from torchdoctor.run import ranks
from torchdoctor.run.nodes.board import FolderBoard
from torchdoctor.run.nodes.job import CARD, STOPPING, Launch, launch_facts, read_json, write_json
from torchdoctor.run.nodes.mirror import Mirror, status
from torchdoctor.run.nodes.view import describe, read_folder
from torchdoctor.run.summary import STOPPED

HERE = launch_facts({"MASTER_ADDR": "h", "MASTER_PORT": "1", "LOCAL_WORLD_SIZE": "1"})
THERE = Launch.from_dict({**HERE.to_dict(), "host": "node-b"})


def job(tmp_path: Path, here: dict, there: dict | None) -> Path:  # type: ignore[type-arg]
    """This node (rank 0 unless said) and, through a shared folder, another one; returns this node's run folder."""
    folders = []
    for name, spec, launch in (("a", here, HERE), ("b", there, THERE)):
        if spec is None:
            continue
        folder = tmp_path / name
        folder.mkdir()
        pid = spec.pop("pid")
        summary = spec.pop("summary", True)
        rank_state(folder, calls=spec.pop("calls", [("barrier", 7)]), pid=pid, launch=launch, **spec)
        lines = [{"type": "torch", "pid": pid, "role": "rank", "rank": spec["rank"]}]
        if summary:
            lines.append({"type": "process", "pid": pid, "rank": spec["rank"], "role": "rank", "torch": True, "stats": {"steps": 2}})
        (folder / f"p{pid}-1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        folders.append(folder)
    helpers = [Mirror(folder, FolderBoard(tmp_path / "shared", "job"), os.getpid()) for folder in folders]
    for helper in reversed(helpers):
        helper.publish()
    helpers[0].pull()
    status(folders[0], mode="folder", where="the shared folder", connected=True, reached=True, error=None,
           slot=helpers[0].slot, world=helpers[0].world(), complete=helpers[0].complete())
    return folders[0]


def test_another_nodes_ranks_are_read_with_their_host_and_liveness(tmp_path: Path) -> None:
    folder = job(tmp_path, {"rank": 0, "pid": DEAD}, {"rank": 1, "pid": os.getpid(), "running": True})
    mine, theirs = ranks.read_states(folder)
    assert (mine.rank, mine.here, mine.host, mine.alive) == (0, True, HERE.host, False)
    assert (theirs.rank, theirs.here, theirs.host, theirs.alive, theirs.known) == (1, False, "node-b", True, True)


def test_a_single_node_job_reads_as_before(tmp_path: Path) -> None:
    rank_state(tmp_path, 0, [], launch=HERE)
    (state,) = ranks.read_states(tmp_path)
    assert state.host is None and state.here


def stuck(tmp_path: Path, here_rank: int = 0) -> Path:
    return job(tmp_path, {"rank": here_rank, "pid": os.getpid(), "waiting": True, "calls": [("all_reduce", 5)]},
               {"rank": 1 - here_rank, "pid": os.getpid(), "waiting": True, "calls": [("barrier", 6)]})


def test_rank_0s_node_decides_a_deadlock_and_tells_the_others_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = stuck(tmp_path)
    watch = ranks.HangWatch(folder, stop_after=0.0)
    assert watch.check() is None  # first seen
    monkeypatch.setattr(ranks, "LEAD", 60.0)
    assert watch.check() is None  # decided: the others are told, this node waits for them
    said = read_json(folder / "nodes" / STOPPING)
    assert said is not None and said["reason"].startswith("every rank waited there")
    monkeypatch.setattr(ranks, "LEAD", 0.0)
    stop = watch.check()
    assert stop is not None and stop.reason == said["reason"]


def test_another_node_follows_rank_0s_node(tmp_path: Path) -> None:
    folder = stuck(tmp_path, here_rank=1)
    watch = ranks.HangWatch(folder, stop_after=0.0)
    assert watch.check() is None and watch.check() is None  # it sees the deadlock, but it is not its call
    assert not (folder / "nodes" / STOPPING).exists()
    card = read_json(folder / "nodes" / "2" / CARD)
    write_json(folder / "nodes" / "2" / CARD, {**card, "stopping": "every rank waited there until ..."})  # type: ignore[dict-item]
    stop = watch.check()
    assert stop is not None and stop.reason == "every rank waited there until ..."


def test_no_decision_on_a_node_whose_news_stopped(tmp_path: Path) -> None:
    folder = stuck(tmp_path)
    card = read_json(folder / "nodes" / "2" / CARD)
    write_json(folder / "nodes" / "2" / CARD, {**card, "changed": 0.0})  # type: ignore[dict-item]
    watch = ranks.HangWatch(folder, stop_after=0.0)
    assert watch.check() is None and watch.check() is None
    assert not any(s.known for s in ranks.read_states(folder) if not s.here)


def test_the_records_of_every_node_with_their_host(tmp_path: Path) -> None:
    folder = job(tmp_path, {"rank": 0, "pid": DEAD}, {"rank": 1, "pid": DEAD + 1, "summary": False})
    records = read_folder(folder)
    by_rank = {p["rank"]: p for p in records.processes}
    assert by_rank[0]["host"] and "node" not in by_rank[0]
    assert (by_rank[1]["host"], by_rank[1]["node"], by_rank[1]["summary"]) == ("node-b", 2, "not arrived")  # not "lost"


def test_the_report_names_the_nodes_and_the_ranks_nobody_sent(tmp_path: Path) -> None:
    folder = job(tmp_path, {"rank": 0, "pid": DEAD, "world": 3}, {"rank": 1, "pid": os.getpid(), "running": True, "summary": False, "world": 3})
    report = Report(command="run")
    describe(report, folder, None)
    assert report.notices[0] == f"the job ran on 2 nodes: {HERE.host} (rank 0, this node); node-b (rank 1)"
    assert report.notices[1].startswith("rank 2 of the job was not observed: no node published its records through the shared folder")
    assert report.notices[2].startswith("the last records of rank 1 on node-b did not arrive before this report")
    assert [n["ranks"] for n in report.meta["nodes"]] == [[0], [1]]


@pytest.mark.parametrize("mine", [(0, 1), (2, 3)])
def test_a_node_that_reached_nobody_says_so(tmp_path: Path, mine: tuple[int, int]) -> None:
    for rank in mine:
        rank_state(tmp_path, rank, [], world=4, launch=HERE)
    (tmp_path / "nodes").mkdir()
    status(tmp_path, mode="store", where="the job's store at node-0:29500", connected=False, reached=False,
           error="DistNetworkError: Connection refused", complete=False)
    report = Report(command="run")
    describe(report, tmp_path, None)
    if 0 in mine:
        assert report.notices[0] == ("this node could not reach the job's store at node-0:29500 to exchange records with the job's "
                                     "other nodes (DistNetworkError: Connection refused): this report covers only this node's ranks 0-1")
        assert report.notices[1].startswith("ranks 2-3 of the job were not observed")
    else:
        assert report.notices == ["this node never saw rank 0's node through the job's store at node-0:29500 (DistNetworkError: "
                                  "Connection refused): this report covers only this node's ranks 2-3, and rank 0's node may lack them"]


def test_collectives_out_of_order_across_hosts_name_the_hosts(tmp_path: Path) -> None:
    folder = stuck(tmp_path)
    (divergence,) = ranks.divergences(ranks.read_states(folder))
    assert divergence.difference() == (f"their 1st collective differs: rank 0 on {HERE.host} calls `all_reduce` (float32[4]) at "
                                       "/job/train.py:5, rank 1 on node-b calls `barrier` at /job/train.py:6")


def test_another_nodes_report_points_at_rank_0s(tmp_path: Path) -> None:
    folder = job(tmp_path, {"rank": 1, "pid": DEAD + 1}, {"rank": 0, "pid": DEAD})
    assert not (folder / "nodes" / "2" / f"c{DEAD}.json").exists()  # only rank 0's node copies the others' files
    report = Report(command="run")
    describe(report, folder, None)
    assert report.notices == [f"this report covers this node's rank 1 ({HERE.host}); the merged report, with every rank of the job, "
                              "is written by rank 0's node (node-b)"]


def test_another_node_that_followed_rank_0s_stop_says_who_decided(tmp_path: Path) -> None:
    folder = stuck(tmp_path, here_rank=1)
    card = read_json(folder / "nodes" / "2" / CARD)
    write_json(folder / "nodes" / "2" / CARD, {**card, "stopping": "every rank waited there until ..."})  # type: ignore[dict-item]
    report = Report(command="run", meta={"stopped": "every rank waited there until ..."},
                    notices=[STOPPED])
    describe(report, folder, None)
    assert report.notices[0] == ("torchdoctor stopped the job: rank 0's node (node-b) found every rank waiting in a collective that "
                                 "the others will never call, and this node stopped its ranks with it; TD461 in the merged report says where")
    assert report.notices[1].startswith("this report covers this node's rank 1 (")
