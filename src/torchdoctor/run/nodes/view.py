"""What the runner knows of the job's other nodes: the files their helpers sent (in
`<run folder>/nodes/<slot>/`), their cards, and what the report says about them.

No torch here.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchdoctor.core.report import Report
from torchdoctor.core.wording import ranks_named
from torchdoctor.run.nodes.job import CARD, STATUS, local_states, nodes_folder, read_json
from torchdoctor.run.records import RunRecords, read_files
from torchdoctor.run.summary import STOPPED

#: what another node's report says instead of the summary's STOPPED
FOLLOWED = ("torchdoctor stopped the job: rank 0's node ({host}) found every rank waiting in a collective that the others "
            "will never call, and this node stopped its ranks with it; TD461 in the merged report says where")

#: seconds without a new card after which a node's view is out of date (its helper publishes
#: every 0.5 s): the hang watch then decides nothing about its ranks
STALE = 5.0


@dataclass(frozen=True)
class Node:
    """Another runner of the job, as its last card said."""

    slot: int
    host: str | None
    ranks: tuple[int, ...]
    final: frozenset[int]  # its ranks whose last records arrived
    running: frozenset[int]  # pids of its ranks' processes that still ran
    changed: float  # time.time() (here) when its card last advanced
    ended: dict[str, Any] | None  # its job's end, if it said so before the report
    folder: Path
    stopping: str | None = None  # why its runner (global rank 0's) is stopping the job (a deadlock)

    @property
    def fresh(self) -> bool:
        return time.time() - self.changed < STALE

    def label(self) -> str:
        return f"{self.host or '?'} ({_ranks(self.ranks)})"


def status(folder: Path) -> dict[str, Any] | None:
    """The helper's own status (None: no exchange: a single-node job)."""
    return read_json(nodes_folder(folder) / STATUS)


def remote_nodes(folder: Path) -> list[Node]:
    found = []
    base = nodes_folder(folder)
    if not base.is_dir():
        return []
    for path in sorted(base.iterdir(), key=lambda p: (len(p.name), p.name)):
        card = read_json(path / CARD) if path.is_dir() and path.name.isdigit() else None
        if card is None:
            continue
        found.append(Node(
            slot=int(path.name), host=card.get("host"), ranks=tuple(card.get("ranks") or ()),
            final=frozenset(card.get("final") or ()), running=frozenset(card.get("alive") or ()),
            changed=float(card.get("changed") or 0.0), ended=card.get("ended"), folder=path, stopping=card.get("stopping"),
        ))
    return found


def on_nodes(report: Report, folder: Path, problem: str | None) -> str | None:
    """Say in the report what it covers of a multi-node job. Returns the tag of this node's report
    file when this is not the node of global rank 0 (whose runner writes the merged report)."""
    if status(folder) is None and not problem:
        return None
    states = local_states(folder)
    own = {int(s["rank"]) for s in states}
    world = max((int(s["world"]) for s in states), default=None)
    describe(report, folder, problem)
    if not own or 0 in own:
        return None
    group = next((s["launch"]["group_rank"] for s in states if (s.get("launch") or {}).get("group_rank") is not None), None)
    report.title = f"{report.title} · {_ranks(own)} of {world}: the merged report is rank 0's node's"
    return f"node{group}" if group is not None else f"rank{min(own)}"


def describe(report: Report, folder: Path, problem: str | None) -> None:
    """The nodes of a multi-node job in the report: which this report covers, which it could not
    see, and whose last records did not arrive (meta["nodes"] and notices). A single-node job: nothing."""
    said = status(folder)
    if said is None:
        if problem:
            report.notices.append(f"the job spans other nodes, but this node could not exchange records with them: {problem}")
        return
    states = local_states(folder)
    own = {int(s["rank"]) for s in states}
    worlds = [int(s["world"]) for s in states] + ([said["world"]] if isinstance(said.get("world"), int) else [])
    world = max(worlds, default=None)
    host = next(((s.get("launch") or {}).get("host") for s in states if (s.get("launch") or {}).get("host")), None)
    others = remote_nodes(folder)
    report.meta["nodes"] = [
        {"host": host, "ranks": sorted(own), "this": True, "slot": said.get("slot")},
        *({"host": n.host, "ranks": list(n.ranks), "this": False, "slot": n.slot, "last_records": sorted(n.final),
           "ended": n.ended} for n in others),
    ]
    seen = set(own).union(*(set(n.ranks) for n in others))
    where = said.get("where", "the job's store")
    if own and 0 not in own:  # another node's report: its own ranks; the merged one is rank 0's node's
        zero = next((n for n in others if 0 in n.ranks), None)
        if zero is not None:
            report.notices.append(f"this report covers this node's {_ranks(own)} ({host or '?'}); the merged report, with every "
                                  f"rank of the job, is written by rank 0's node ({zero.host or '?'})")
            if report.meta.get("stopped") and zero.stopping:  # rank 0's node decided, and only it sees every rank's collectives
                report.notices[:] = [FOLLOWED.format(host=zero.host or "?") if n == STOPPED else n for n in report.notices]
        else:
            why = f" ({said['error']})" if said.get("error") and not said.get("reached") else ""
            report.notices.append(f"this node never saw rank 0's node through {where}{why}: this report covers only this "
                                  f"node's {_ranks(own)}, and rank 0's node may lack them")
        return
    if others:
        listed = "; ".join([f"{host or '?'} ({_ranks(own)}, this node)", *(n.label() for n in others)])
        report.notices.append(f"the job ran on {len(others) + 1} nodes: {listed}")
    elif said.get("error") and not said.get("reached"):
        report.notices.append(f"this node could not reach {where} to exchange records with the job's other nodes "
                              f"({said['error']}): this report covers only this node's {_ranks(own)}")
    missing = sorted(set(range(world)) - seen) if world else []
    if missing:
        report.notices.append(
            f"{_ranks(missing)} of the job {'was' if len(missing) == 1 else 'were'} not observed: no node published "
            f"{'its' if len(missing) == 1 else 'their'} records through {where} (a node started without `torchdoctor run`, "
            "or one whose runner could not reach it); what they did is not in this report")
    for node in others:
        late = sorted(set(node.ranks) - node.final)
        if late:
            report.notices.append(
                f"the last records of {_ranks(late)} on {node.host or '?'} did not arrive before this report "
                "(what they found at exit, their final counts); the findings they made before are in it")


def _ranks(ranks: Any) -> str:
    return ranks_named(ranks) if ranks else "no rank"


def read_folder(folder: Path) -> RunRecords:
    """Read and merge every process's records: this node's, and in a multi-node job those the
    other nodes' runners sent."""
    return read_files(record_files(folder))


def record_files(folder: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every record file with where its process ran: nothing more on a single node; in a
    multi-node job the host (and the other nodes' slot in the exchange) of each."""
    local = sorted(folder.glob("p*.jsonl"))
    said = status(folder)
    if said is None:
        return [(path, {}) for path in local]
    here: dict[str, Any] = {"host": socket.gethostname()}
    found = [(path, here) for path in local]
    for node in remote_nodes(folder):
        found += [(path, {"host": node.host, "node": node.slot}) for path in sorted(node.folder.glob("p*.jsonl"))]
    return found
