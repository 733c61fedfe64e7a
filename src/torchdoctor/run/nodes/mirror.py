"""The exchange helper of one node: `python -m torchdoctor.run.nodes.mirror ...`, started by the
runner once its job turns out to span other runners (exchange.py).

Every TICK it publishes what this node's processes wrote since the last time (the new lines of
each record file, the collectives' state files that changed) with a card that says who this node
is (host, ranks, which of its ranks' processes still run, which have written their last
records); the helper of global rank 0's node copies every other node's into
`<run folder>/nodes/<slot>/`, another node's only rank 0's node's card. Its own status
(reached or not, why, which ranks' last records it has) goes to `<run folder>/nodes/status.json`
for the runner and for global rank 0, which waits for it at exit (final.py).

It ends when the runner writes `nodes/ended.json` (after one last publication; on a shared folder
the node of rank 0 also waits, at most `TORCHDOCTOR_NODES_WAIT` seconds, for the others' last
records), or when the runner is gone. Its output goes to `nodes/mirror.log`, never to the
user's terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchdoctor.run.launcher import alive
from torchdoctor.run.nodes.board import Board, FolderBoard, StoreBoard
from torchdoctor.run.nodes.job import (
    CARD,
    ENDED,
    FINAL_WAIT,
    STATUS,
    STOPPING,
    nodes_folder,
    read_json,
    split_store,
    write_json,
)

#: seconds between two publications
TICK = 0.5
#: seconds the helper keeps trying to reach the store before it says it could not
CONNECT_FOR = 30.0
#: seconds each attempt to reach the store, and each operation on it, may take
STORE_TIMEOUT = 3.0


@dataclass
class Published:
    """What this node has published of its own files so far."""

    offsets: dict[str, int] = field(default_factory=dict)  # record file -> bytes published
    chunks: dict[str, int] = field(default_factory=dict)  # record file -> chunks published
    states: dict[str, tuple[int, bytes]] = field(default_factory=dict)  # state file -> (version, content)
    ended: dict[int, bool] = field(default_factory=dict)  # pid -> wrote its summary ("process" record)
    ranks: dict[int, tuple[int, int]] = field(default_factory=dict)  # pid -> (rank, world), from its state file
    host: str | None = None  # as the ranks name it


@dataclass
class Pulled:
    """What this node has copied of another node's files so far."""

    chunks: dict[str, int] = field(default_factory=dict)
    states: dict[str, int] = field(default_factory=dict)
    seq: int = -1
    changed: float = 0.0  # time.time() when its card last advanced


class Mirror:
    def __init__(self, folder: Path, board: Board, runner: int) -> None:
        self.folder = folder
        self.board = board
        self.runner = runner
        self.slot = board.claim()
        self.seq = 0
        self.mine = Published()
        self.theirs: dict[int, Pulled] = {}
        self.cards: dict[int, dict[str, Any]] = {}
        self._leader: int | None = None  # the slot of global rank 0's node, once seen (another node's helper)
        (nodes_folder(folder)).mkdir(exist_ok=True)

    # -- this node's files ---------------------------------------------------------------------
    def publish(self, ended: dict[str, Any] | None = None) -> None:
        for path in sorted(self.folder.glob("p*.jsonl")):
            self._publish_lines(path)
        for path in sorted(self.folder.glob("c*.json")):
            self._publish_state(path)
        self.seq += 1
        self.board.set(f"card/{self.slot}", json.dumps(self.card(ended)).encode())

    def _publish_lines(self, path: Path) -> None:
        start = self.mine.offsets.get(path.name, 0)
        try:
            with open(path, "rb") as handle:
                handle.seek(start)
                data = handle.read()
        except OSError:
            return
        complete = data[: data.rfind(b"\n") + 1]  # a line still being written waits for the next tick
        if not complete:
            return
        number = self.mine.chunks.get(path.name, 0)
        self.board.set(f"chunk/{self.slot}/{path.name}/{number}", complete)
        self.mine.chunks[path.name] = number + 1
        self.mine.offsets[path.name] = start + len(complete)
        for line in complete.splitlines():
            if b'"type": "process"' in line:
                try:
                    self.mine.ended[int(json.loads(line)["pid"])] = True
                except (ValueError, KeyError, TypeError):
                    continue

    def _publish_state(self, path: Path) -> None:
        try:
            content = path.read_bytes()
            data = json.loads(content)
            self.mine.ranks[int(data["pid"])] = (int(data["rank"]), int(data["world"]))
            self.mine.host = (data.get("launch") or {}).get("host") or self.mine.host
        except (OSError, ValueError, KeyError, TypeError):
            return
        version, known = self.mine.states.get(path.name, (0, b""))
        if content != known:
            self.board.set(f"file/{self.slot}/{path.name}", content)
            self.mine.states[path.name] = (version + 1, content)

    def running(self) -> set[int]:
        """The pids of this node's ranks that still run."""
        return {pid for pid in self.mine.ranks if alive(pid)}

    def final(self, running: set[int]) -> set[int]:
        """This node's ranks whose last records are written: a summary, or a process that is gone."""
        return {rank for pid, (rank, _) in self.mine.ranks.items() if self.mine.ended.get(pid) or pid not in running}

    def card(self, ended: dict[str, Any] | None = None) -> dict[str, Any]:
        running = self.running()
        return {
            "slot": self.slot, "seq": self.seq, "runner": self.runner, "host": self.mine.host,
            "ranks": sorted({rank for rank, _ in self.mine.ranks.values()}),
            "world": max((world for _, world in self.mine.ranks.values()), default=None),
            "alive": sorted(running), "final": sorted(self.final(running)),
            "chunks": dict(self.mine.chunks), "states": {name: v for name, (v, _) in self.mine.states.items()},
            "ended": ended, "stopping": (read_json(nodes_folder(self.folder) / STOPPING) or {}).get("reason"),
        }

    # -- the other nodes' files ----------------------------------------------------------------
    def pull(self) -> None:
        """The node of global rank 0 copies every other node's files (it writes the merged report
        and decides when the job is deadlocked); another node reads only rank 0's node's card (to
        follow it when it stops the job), so the exchange costs the store O(nodes), not O(nodes²)."""
        leader = None if self.holds_rank0() else self._leader
        for slot in [leader] if leader is not None else range(1, self.board.count() + 1):
            if slot == self.slot:
                continue
            raw = self.board.get(f"card/{slot}")
            if raw is None:
                continue
            card = json.loads(raw)
            pulled = self.theirs.setdefault(slot, Pulled())
            target = nodes_folder(self.folder) / str(slot)
            target.mkdir(exist_ok=True)
            if self.holds_rank0():
                self._pull_files(slot, card, pulled, target)
            elif 0 in card.get("ranks", ()):
                self._leader = slot
            if card.get("seq", 0) != pulled.seq:
                pulled.seq, pulled.changed = card.get("seq", 0), time.time()
            card["changed"] = pulled.changed
            self.cards[slot] = card
            write_json(target / CARD, card)

    def _pull_files(self, slot: int, card: dict[str, Any], pulled: Pulled, target: Path) -> None:
        for name, count in card.get("chunks", {}).items():
            self._pull_lines(slot, name, count, pulled, target)
        for name, version in card.get("states", {}).items():
            if version > pulled.states.get(name, 0):
                content = self.board.get(f"file/{slot}/{name}")
                if content is not None:
                    (target / f".{name}.tmp").write_bytes(content)
                    os.replace(target / f".{name}.tmp", target / name)
                    pulled.states[name] = version

    def _pull_lines(self, slot: int, name: str, count: int, pulled: Pulled, target: Path) -> None:
        have = pulled.chunks.get(name, 0)
        if have >= count:
            return
        with open(target / name, "ab") as handle:
            for number in range(have, count):
                data = self.board.get(f"chunk/{slot}/{name}/{number}")
                if data is None:
                    break
                handle.write(data)
                pulled.chunks[name] = number + 1

    # -- what the runner and rank 0 read ---------------------------------------------------------
    def final_ranks(self) -> set[int]:
        mine = self.final(self.running())
        return mine.union(*(set(card.get("final", [])) for card in self.cards.values()))

    def world(self) -> int | None:
        worlds = [w for _, w in self.mine.ranks.values()] + [c["world"] for c in self.cards.values() if c.get("world")]
        return max(worlds, default=None)

    def complete(self) -> bool:
        """Every rank of the job is this node's (read here directly) or has left its last records on another."""
        world = self.world()
        if world is None:
            return False
        mine = {rank for rank, _ in self.mine.ranks.values()}
        return set(range(world)) <= mine.union(*(set(card.get("final", [])) for card in self.cards.values()))

    def holds_rank0(self) -> bool:
        return any(rank == 0 for rank, _ in self.mine.ranks.values())


def status(folder: Path, **fields: Any) -> None:
    write_json(nodes_folder(folder) / STATUS, {"pid": os.getpid(), "time": time.time(), **fields})


def connect(args: argparse.Namespace) -> Board:
    """The board, or an exception saying why it could not be reached within CONNECT_FOR seconds."""
    if args.shared_dir:
        return FolderBoard(Path(args.shared_dir), args.job)
    address = split_store(args.store)
    if address is None:
        raise ValueError(f"not a host:port: {args.store!r}")
    deadline = time.monotonic() + CONNECT_FOR
    while True:
        try:
            return StoreBoard(address[0], address[1], args.job, STORE_TIMEOUT)
        except Exception:
            if time.monotonic() > deadline or not alive(args.runner):
                raise
            time.sleep(TICK)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="torchdoctor.run.nodes.mirror")
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--runner", type=int, required=True)
    parser.add_argument("--store")
    parser.add_argument("--shared-dir")
    args = parser.parse_args(argv)
    where = f"the shared folder {args.shared_dir}" if args.shared_dir else f"the job's store at {args.store}"
    mode = "folder" if args.shared_dir else "store"
    status(args.folder, mode=mode, where=where, connected=False, error=None, complete=False)
    try:
        mirror = Mirror(args.folder, connect(args), args.runner)
    except Exception as exc:  # noqa: BLE001 - said in the report: this node could not see the others
        status(args.folder, mode=mode, where=where, connected=False, error=_said(exc), complete=False)
        return 1
    return run(mirror, args.folder, mode, where)


def run(mirror: Mirror, folder: Path, mode: str, where: str) -> int:
    error = None
    reached = False  # the board answered at least once
    ended_at: float | None = None
    while alive(mirror.runner):
        ended = read_json(nodes_folder(folder) / ENDED)
        try:
            mirror.publish(ended)
            mirror.pull()
            error, reached = None, True
        except Exception as exc:  # noqa: BLE001 - the store went away (its node ended): keep what arrived
            error = _said(exc)
        complete = mirror.complete()
        status(folder, mode=mode, where=where, connected=error is None, reached=reached, error=error, slot=mirror.slot,
               nodes=sorted(mirror.cards), world=mirror.world(), final=sorted(mirror.final_ranks()), complete=complete,
               holds_rank0=mirror.holds_rank0())
        if ended is not None:
            ended_at = ended_at or time.monotonic()
            waits = mode == "folder" and mirror.holds_rank0() and not complete and error is None
            if not waits or time.monotonic() - ended_at > FINAL_WAIT:
                return 0
        time.sleep(TICK)
    return 0


def _said(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
