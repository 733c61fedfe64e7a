"""Global rank 0 at its exit waits for the other nodes' last records only while that can help."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from torchdoctor.run.nodes import final
from torchdoctor.run.nodes.job import STATUS, launch_facts, write_json

SPANS = launch_facts({"LOCAL_WORLD_SIZE": "1", "MASTER_ADDR": "h", "MASTER_PORT": "1"})
LOCAL = launch_facts({"MASTER_ADDR": "h", "MASTER_PORT": "1"})


def status(folder: Path, **fields: object) -> None:
    (folder / "nodes").mkdir(exist_ok=True)
    write_json(folder / "nodes" / STATUS, {"pid": os.getpid(), "mode": "store", "connected": True, "error": None, "complete": False, **fields})


def timed(folder: Path, launch=SPANS) -> float:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    final.await_peers(folder, launch, 2)
    return time.monotonic() - started


@pytest.fixture(autouse=True)
def short_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(final, "FINAL_WAIT", 2.0)


def test_no_wait_on_a_single_node(tmp_path: Path) -> None:
    assert timed(tmp_path, LOCAL) < 0.5


def test_waits_until_the_helper_has_every_rank(tmp_path: Path) -> None:
    status(tmp_path)
    threading.Timer(0.5, status, args=(tmp_path,), kwargs={"complete": True}).start()
    assert 0.4 < timed(tmp_path) < 1.5


def test_waits_for_a_helper_that_is_still_to_come_at_most_the_bound(tmp_path: Path) -> None:
    assert 1.9 < timed(tmp_path) < 3.0


@pytest.mark.parametrize("fields", [
    {"complete": True},
    {"connected": False, "error": "DistNetworkError: Connection refused"},  # the store cannot be reached
    {"mode": "folder"},  # a shared folder outlives every node: the helper waits after the job instead
    {"pid": 2**22 + 99},  # the helper is gone
])
def test_no_wait_when_waiting_cannot_help(tmp_path: Path, fields: dict[str, object]) -> None:
    status(tmp_path, **fields)
    assert timed(tmp_path) < 0.5
