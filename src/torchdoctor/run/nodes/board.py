"""Where the nodes of a job leave each other their files: the job's own TCPStore, or a shared folder.

Both offer the same four operations, none of which blocks on a key that is not there yet:
`set`, `get` (None when absent), `claim` (the next free slot number, 1, 2, ...) and `count` (the
slots claimed so far). Keys are plain paths (`card/1`, `chunk/1/p123.jsonl/0`).

The store is reached as one more client of the store the job's ranks rendezvoused through
(MASTER_ADDR:MASTER_PORT as the ranks had it: rank 0's TCPStore, or torchrun's agent store),
with `wait_for_workers=False` so that it is never counted as a worker, and every key under
`torchdoctor/run/<job>/`, so nothing of the job's own rendezvous is read or changed. Only the
helper process (mirror.py) creates one: torch is imported there, never in the runner.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any, Protocol

PREFIX = "torchdoctor/run/"


class Board(Protocol):
    where: str

    def set(self, key: str, value: bytes) -> None: ...

    def get(self, key: str) -> bytes | None: ...

    def claim(self) -> int: ...

    def count(self) -> int: ...


class StoreBoard:
    """Keys in the job's TCPStore, under `torchdoctor/run/<job>/`."""

    def __init__(self, host: str, port: int, job: str, timeout: float) -> None:
        from torch.distributed import TCPStore

        self.where = f"the job's store at {host}:{port}"
        self.prefix = f"{PREFIX}{job}/"
        self._store: Any = TCPStore(host, port, is_master=False, wait_for_workers=False,
                                    timeout=datetime.timedelta(seconds=timeout))

    def set(self, key: str, value: bytes) -> None:
        self._store.set(self.prefix + key, value)

    def get(self, key: str) -> bytes | None:
        full = self.prefix + key
        if not self._store.check([full]):
            return None
        return bytes(self._store.get(full))

    def claim(self) -> int:
        return int(self._store.add(self.prefix + "slots", 1))

    def count(self) -> int:
        return int(self._store.add(self.prefix + "slots", 0))


class FolderBoard:
    """Files under `<shared dir>/<job>/`: a file per key, written whole and renamed into place."""

    def __init__(self, root: Path, job: str) -> None:
        self.root = root / job
        self.where = f"the shared folder {root}"
        (self.root / "slots").mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*key.split("/"))

    def set(self, key: str, value: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_bytes(value)
        os.replace(temporary, path)

    def get(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except OSError:
            return None

    def claim(self) -> int:
        slot = self.count() + 1
        while True:
            try:  # exclusive creation: two nodes never get one slot (also on NFS v3 and later)
                os.close(os.open(self.root / "slots" / str(slot), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                return slot
            except FileExistsError:
                slot += 1

    def count(self) -> int:
        return max((int(p.name) for p in (self.root / "slots").iterdir() if p.name.isdigit()), default=0)
