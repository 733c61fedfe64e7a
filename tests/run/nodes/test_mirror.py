"""The exchange helper (run/nodes/mirror.py) on two simulated nodes: each has its own run folder
with state files written by the real writer (tests/run/test_ranks.py) and record lines; they
share a folder board. What one node publishes arrives whole, once, in the other's nodes/<slot>/."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.run.test_ranks import DEAD, rank_state
from torchdoctor.dist.launch import free_port
from torchdoctor.run.nodes import mirror
from torchdoctor.run.nodes.board import FolderBoard
from torchdoctor.run.nodes.job import CARD, ENDED, STATUS, read_json, write_json
from torchdoctor.run.nodes.mirror import Mirror


def node(tmp_path: Path, name: str, rank: int, *, pid: int, summary: bool) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    rank_state(folder, rank, [("barrier", 7)], pid=pid)
    lines = [{"type": "finding", "key": "k", "pid": pid, "finding": {"rule": "TD141"}}]
    if summary:
        lines.append({"type": "process", "pid": pid, "rank": rank, "role": "rank", "stats": {"steps": 3}})
    (folder / f"p{pid}-1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def test_one_nodes_files_arrive_in_the_others_folder_once(tmp_path: Path) -> None:
    here = node(tmp_path, "a", 0, pid=os.getpid(), summary=False)
    there = node(tmp_path, "b", 1, pid=DEAD + 1, summary=True)
    a = Mirror(here, FolderBoard(tmp_path / "shared", "job"), os.getpid())
    b = Mirror(there, FolderBoard(tmp_path / "shared", "job"), os.getpid())
    assert (a.slot, b.slot) == (1, 2)
    b.publish()
    a.publish()
    a.pull()
    copied = here / "nodes" / "2"
    assert (copied / f"c{DEAD + 1}.json").read_bytes() == (there / f"c{DEAD + 1}.json").read_bytes()
    assert (copied / f"p{DEAD + 1}-1.jsonl").read_bytes() == (there / f"p{DEAD + 1}-1.jsonl").read_bytes()
    card = read_json(copied / CARD)
    assert card is not None and (card["ranks"], card["final"], card["alive"], card["world"]) == ([1], [1], [], 2)
    assert a.complete() and a.holds_rank0() and not b.holds_rank0()

    with open(there / f"p{DEAD + 1}-1.jsonl", "a") as handle:
        handle.write('{"type": "progress", "steps": 4}\n{"type": "progress", "ste')  # the second line is still being written
    b.publish()
    a.pull()
    a.pull()
    lines = (copied / f"p{DEAD + 1}-1.jsonl").read_text().splitlines()
    assert len(lines) == 3 and lines[-1] == '{"type": "progress", "steps": 4}'


def test_a_rank_still_running_without_its_last_records_keeps_the_exchange_incomplete(tmp_path: Path) -> None:
    here = node(tmp_path, "a", 0, pid=DEAD, summary=True)
    there = node(tmp_path, "b", 1, pid=os.getpid(), summary=False)  # alive, no summary yet
    a = Mirror(here, FolderBoard(tmp_path / "shared", "job"), os.getpid())
    b = Mirror(there, FolderBoard(tmp_path / "shared", "job"), os.getpid())
    b.publish()
    a.publish()
    a.pull()
    assert not a.complete() and a.final_ranks() == {0}
    assert read_json(here / "nodes" / "2" / CARD)["alive"] == [os.getpid()]  # type: ignore[index]


def test_the_helper_says_why_it_could_not_reach_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mirror, "CONNECT_FOR", 0.2)
    monkeypatch.setattr(mirror, "STORE_TIMEOUT", 0.5)
    (tmp_path / "nodes").mkdir()
    args = ["--folder", str(tmp_path), "--job", "j", "--runner", str(os.getpid()), "--store", f"127.0.0.1:{free_port()}"]
    assert mirror.main(args) == 1
    status = read_json(tmp_path / "nodes" / STATUS)
    assert status is not None and not status["connected"] and status["error"].startswith("DistNetworkError")


def test_the_helper_ends_after_its_last_publication(tmp_path: Path) -> None:
    here = node(tmp_path, "a", 1, pid=DEAD + 1, summary=True)
    board = FolderBoard(tmp_path / "shared", "job")
    helper = Mirror(here, board, os.getpid())
    write_json(here / "nodes" / ENDED, {"exit_status": 0, "stopped": None})
    assert mirror.run(helper, here, "folder", "the shared folder") == 0
    card = json.loads(board.get("card/1") or b"{}")
    assert card["ended"] == {"exit_status": 0, "stopped": None} and card["final"] == [1]
    status = read_json(here / "nodes" / STATUS)
    assert status is not None and status["reached"] and status["slot"] == 1 and not status["holds_rank0"]


def test_rank_0s_node_waits_on_a_shared_folder_for_the_others_last_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mirror, "FINAL_WAIT", 0.3)
    here = node(tmp_path, "a", 0, pid=DEAD, summary=True)
    (here / f"c{DEAD}.json").write_text((here / f"c{DEAD}.json").read_text().replace('"world": 2', '"world": 3'))
    helper = Mirror(here, FolderBoard(tmp_path / "shared", "job"), os.getpid())
    write_json(here / "nodes" / ENDED, {"exit_status": 0, "stopped": None})
    assert mirror.run(helper, here, "folder", "the shared folder") == 0  # ranks 1, 2 never came: it gave up
    assert read_json(here / "nodes" / STATUS)["complete"] is False  # type: ignore[index]
