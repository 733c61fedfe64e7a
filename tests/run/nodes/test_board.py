"""The two boards the nodes exchange through: a shared folder, and the job's own TCPStore (a real
one here, hosted in the test as rank 0 would)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from torchdoctor.dist.launch import free_port
from torchdoctor.run.nodes.board import PREFIX, FolderBoard, StoreBoard


def exercise(one, other) -> None:  # type: ignore[no-untyped-def]
    assert (one.claim(), other.claim(), one.count()) == (1, 2, 2)
    assert one.get("card/1") is None
    one.set("card/1", b'{"seq": 1}')
    assert other.get("card/1") == b'{"seq": 1}'
    other.set("card/1", b"again")
    assert one.get("card/1") == b"again"


def test_a_shared_folder(tmp_path: Path) -> None:
    exercise(FolderBoard(tmp_path, "job"), FolderBoard(tmp_path, "job"))
    assert (tmp_path / "job" / "card" / "1").read_bytes() == b"again"
    assert FolderBoard(tmp_path, "another job").count() == 0


def test_the_jobs_own_store_under_a_prefix_of_ours() -> None:
    torch = pytest.importorskip("torch")
    port = free_port()
    server = torch.distributed.TCPStore("127.0.0.1", port, 1, True, timeout=datetime.timedelta(seconds=10), wait_for_workers=False)
    server.set("job/key", b"the job's own")
    exercise(StoreBoard("127.0.0.1", port, "job", 5.0), StoreBoard("127.0.0.1", port, "job", 5.0))
    assert server.get(f"{PREFIX}job/card/1") == b"again" and server.get("job/key") == b"the job's own"
