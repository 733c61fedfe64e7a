"""One preflight rank (torchdoctor.dist.worker) in this process, against a real TCPStore."""

from __future__ import annotations

import time

import pytest
from torch.distributed import TCPStore

from torchdoctor.dist.launch import free_port
from torchdoctor.dist.worker import Worker, parse_args


def test_a_rank_slow_to_import_torch_still_gets_its_wait_after_the_import(capsys: pytest.CaptureFixture[str]) -> None:
    """On a busy machine torch may take longer to import than the whole rendezvous window: the
    rank reaching for the store must not give up before its import is done and its 5 s after
    it have passed (here rank 0 starts its store only then, as a rank as slow as this one would)."""
    port = free_port()
    start = time.time() - 10  # the window (6 s, 8 s for this rank) closed before "torch was imported"
    args = parse_args(["--deadline", repr(start + 6), "--rendezvous", "6", "--timeout", "5", "--sizes", "1024"])
    worker = Worker(args, {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    time.sleep(0.5)  # the rank reaches for the store while torch imports
    worker.ready({})
    server = TCPStore("127.0.0.1", port, 2, True, wait_for_workers=False)  # rank 0 listens only now
    try:
        assert worker.connect(), capsys.readouterr().out
        assert worker.remaining() > 3  # what is left of the 5 s after the import
    finally:
        del server
