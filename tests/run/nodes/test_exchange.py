"""When the runner starts the exchange helper: only for a job whose ranks are not all on this node."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.run.test_ranks import rank_state
from torchdoctor.run.nodes import exchange
from torchdoctor.run.nodes.exchange import Exchange
from torchdoctor.run.nodes.job import Launch, launch_facts


def with_launch(folder: Path, rank: int, world: int, environ: dict[str, str]) -> None:
    rank_state(folder, rank, [], world=world, running=True, launch=launch_facts(environ))


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Launch]:
    calls: list[Launch] = []
    monkeypatch.setattr(Exchange, "_start", lambda self, launch: calls.append(launch))
    return calls


TORCHRUN = {"MASTER_ADDR": "node-0", "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "r"}


def test_not_for_a_job_whose_ranks_are_all_here(tmp_path: Path, started: list[Launch], monkeypatch: pytest.MonkeyPatch) -> None:
    for rank in (0, 1):
        with_launch(tmp_path, rank, 2, {**TORCHRUN, "LOCAL_WORLD_SIZE": "2"})
    watch = Exchange(tmp_path)
    monkeypatch.setattr(exchange, "GRACE", 0.0)
    watch.poll()
    watch.poll()
    assert started == []


def test_at_once_when_torchrun_says_the_node_has_fewer_ranks(tmp_path: Path, started: list[Launch]) -> None:
    with_launch(tmp_path, 0, 4, {**TORCHRUN, "LOCAL_WORLD_SIZE": "1"})
    Exchange(tmp_path).poll()
    assert [launch.store for launch in started] == ["node-0:29500"]


def test_after_a_grace_when_the_other_ranks_do_not_show_up(tmp_path: Path, started: list[Launch], monkeypatch: pytest.MonkeyPatch) -> None:
    with_launch(tmp_path, 0, 2, {"MASTER_ADDR": "h", "MASTER_PORT": "1"})  # a script that starts its ranks itself
    watch = Exchange(tmp_path)
    watch.poll()
    assert started == []
    monkeypatch.setattr(exchange, "GRACE", 0.0)
    watch.poll()
    assert len(started) == 1


def test_without_a_store_address_it_says_so(tmp_path: Path) -> None:
    with_launch(tmp_path, 0, 2, {"LOCAL_WORLD_SIZE": "1"})  # a process group made from a store object
    watch = Exchange(tmp_path)
    watch.poll()
    assert watch.process is None and watch.problem is not None and "--shared-dir" in watch.problem


def test_a_real_helper_through_a_shared_folder(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    with_launch(run, 0, 2, {**TORCHRUN, "LOCAL_WORLD_SIZE": "1"})
    watch = Exchange(run, tmp_path)
    watch.poll()
    assert watch.process is not None
    from torchdoctor.run.launcher import Finished

    watch.end(Finished(returncode=0, seconds=1.0))
    assert watch.process.returncode == 0, (run / "nodes" / "mirror.log").read_text()
    assert (tmp_path / Launch.from_dict({**launch_facts({**TORCHRUN, "LOCAL_WORLD_SIZE": "1"}).to_dict()}).key() / "card" / "1").is_file()
    assert os.path.isfile(run / "nodes" / "status.json")
