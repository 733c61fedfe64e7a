"""What only the runner can see: the ranks of a distributed job side by side.

Each rank records, in its own files, the sequence of collectives it called (a state file per
process, see instruments/distributed.py) and checksums of its replicated parameters (records of
its log, see detectors/replicas.py). Nothing is exchanged between the ranks; the runner
compares them here:

- TD461: the first place where the ranks' sequences of collectives differ (with the user's
  line on each side), at the end of the run, or while every rank is stuck (`HangWatch`, which
  stops a job that can never continue);
- TD462: a collective that failed because the others never joined, told where every other rank
  was (or folded into TD461 when the order explains it);
- TD460: the first parameter and step where replicas differ, and the likely cause.

No torch here.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from torchdoctor.core.finding import Finding
from torchdoctor.core.locate import display_path
from torchdoctor.rules.distributed.collective_timed_out import RULE as TIMED_OUT
from torchdoctor.rules.distributed.collective_timed_out import WHERE
from torchdoctor.rules.distributed.collectives_out_of_order import FAILED_ON, OUTCOMES
from torchdoctor.rules.distributed.collectives_out_of_order import RULE as OUT_OF_ORDER
from torchdoctor.rules.distributed.ddp_unused_parameters import RULE as UNUSED
from torchdoctor.rules.distributed.parameters_differ_across_ranks import RULE as DIVERGED
from torchdoctor.run.launcher import alive
from torchdoctor.run.nodes.job import STOPPING, nodes_folder, write_json
from torchdoctor.run.nodes.view import Node, remote_nodes
from torchdoctor.run.pace import straggler_findings
from torchdoctor.run.stalled_ranks import stalled_rank_findings

#: seconds every rank must have been stuck in mismatched collectives before the job is stopped
#: (a rank writes where it waits after 2 s; the job's own timeout, if shorter, fires first).
#: The environment variable is for tests, which stop sooner.
STOP_AFTER = float(os.environ.get("TORCHDOCTOR_STOP_DEADLOCK_AFTER", "8"))
#: seconds the node of global rank 0 gives the other nodes to stop their part of a deadlocked job
#: before it stops its own (the exchange carries its word to them in about a second)
LEAD = 1.5


# -- the sequences of collectives ---------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One collective of one rank: its position in its group's sequence, and what it was."""

    index: int  # in this rank's sequence of calls on the group
    op: str
    shape: tuple[int, ...] | None
    dtype: str | None
    group: tuple[int, ...] | None
    root: str | None
    file: str | None
    line: int | None

    def matches(self, other: Call) -> bool:
        return (self.op, self.shape, self.dtype, self.root) == (other.op, other.shape, other.dtype, other.root)

    @property
    def site(self) -> tuple[str | None, int | None]:
        return (self.file, self.line)

    def text(self) -> str:
        what = f"`{self.op}`"
        if self.shape is not None:
            what += f" ({self.dtype}[{', '.join(map(str, self.shape))}])"
        if self.root:
            what += f" ({self.root})"
        if self.file:
            what += f" at {display_path(self.file)}:{self.line}"
        return what


@dataclass
class RankState:
    """A rank's state file: its calls per group, where it waits, whether it can still call."""

    pid: int
    rank: int
    world: int
    timeout: float | None
    calls: dict[tuple[int, ...] | None, list[Call]]
    waiting: Call | None
    waited: float
    finished: bool
    completed: bool | None  # None: not known (a rank started by fork)
    alive: bool
    #: the host it ran on, in a job that spans nodes (None on a single node)
    host: str | None = None
    #: False for a rank of another node whose news stopped coming (its alive/waiting may be old)
    known: bool = True
    #: a rank of this node (not one another node's runner sent)
    here: bool = True

    @property
    def stuck(self) -> bool:
        return self.alive and self.waiting is not None

    @property
    def done(self) -> bool:
        """No further collective will come from this rank."""
        return self.finished or not self.alive

    @property
    def ended_normally(self) -> bool:
        """It ran to its end without an exception: the calls it did not make, it never makes.
        (A rank that crashed or was killed stopped early: its crash is the story, not the order.)"""
        return self.finished and self.completed is True


def read_states(folder: Path) -> list[RankState]:
    """The latest state of every rank that initialised a process group (one per rank): this
    node's, and in a multi-node job the other nodes' (sent by their runners, see run/nodes/)."""
    by_rank: dict[tuple[int, int], tuple[float, RankState]] = {}
    for path, where in _state_files(folder):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            state = _state(data, where)
            modified = path.stat().st_mtime
        except (OSError, ValueError, KeyError, TypeError):
            continue
        key = (state.world, state.rank)
        if key not in by_rank or by_rank[key][0] < modified:
            by_rank[key] = (modified, state)
    return sorted((state for _, state in by_rank.values()), key=lambda s: s.rank)


@dataclass(frozen=True)
class _Where:
    """Where a state file comes from: this node (None) or another node's last card."""

    node: Node | None = None
    multi_node: bool = False

    def alive(self, pid: int) -> bool:
        return alive(pid) if self.node is None else pid in self.node.running


def _state_files(folder: Path) -> list[tuple[Path, _Where]]:
    local = list(folder.glob("c*.json"))
    if not nodes_folder(folder).is_dir():
        return [(path, _Where()) for path in local]
    found = [(path, _Where(multi_node=True)) for path in local]
    for node in remote_nodes(folder):
        found += [(path, _Where(node, True)) for path in node.folder.glob("c*.json")]
    return found


def _state(data: dict[str, Any], where: _Where) -> RankState:
    descriptors = {int(k): v for k, v in data["descriptors"].items()}
    counts = {_group(k): int(v) for k, v in (data.get("before") or {}).items()}
    calls: dict[tuple[int, ...] | None, list[Call]] = {}
    by_absolute: dict[int, Call] = {}
    for offset, ident in enumerate(data["calls"]):
        op, shape, dtype, group, root, file, line = descriptors[int(ident)]
        group = _group(group)
        index = counts.get(group, 0)
        counts[group] = index + 1
        call = Call(index, op, tuple(shape) if shape is not None else None, dtype, group, root, file, line)
        calls.setdefault(group, []).append(call)
        by_absolute[int(data["start"]) + offset] = call
    waiting = data.get("waiting")
    finished = bool(data.get("finished"))
    return RankState(
        pid=int(data["pid"]), rank=int(data["rank"]), world=int(data["world"]), timeout=data.get("timeout"),
        calls=calls, waiting=by_absolute.get(int(waiting["index"])) if waiting and not finished else None,
        waited=float(waiting["seconds"]) if waiting else 0.0, finished=finished, completed=data.get("completed"),
        alive=where.alive(int(data["pid"])), host=(data.get("launch") or {}).get("host") if where.multi_node else None,
        known=where.node is None or where.node.fresh, here=where.node is None,
    )


def _group(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, str):  # a group written as a dictionary key: "(0, 1)" or "None"
        value = None if value == "None" else [int(v) for v in value.strip("()[] ").split(",") if v.strip()]
    return tuple(value) if value is not None else None


@dataclass(frozen=True)
class Divergence:
    """The first place where the ranks of one group disagree."""

    group: tuple[int, ...] | None
    index: int  # in the group's sequence
    calls: dict[int, Call | None]  # rank -> its call there (None: it made no such call)
    origin: dict[int, Call] | None  # an earlier position where the calls matched but came from different lines
    states: dict[int, RankState] = field(compare=False)

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.group, self.index, tuple(sorted((r, c.site if c else None) for r, c in self.calls.items())))

    def hosts(self) -> dict[int, str]:
        """Each rank's host, in a job whose ranks ran on several hosts (else none: no need to say)."""
        hosts = {r: s.host for r, s in self.states.items() if s.host}
        return hosts if len(set(hosts.values())) > 1 else {}

    def location(self) -> tuple[str | None, int | None]:
        calls = {r: c for r, c in (self.origin or self.calls).items() if c is not None}
        ranks = sorted(calls)
        for rank in ranks:  # the line that some ranks never reach is the one to change
            others = [self.states[r] for r in ranks if r != rank]
            if others and not any(calls[rank].site in _sites(state, self.group) for state in others):
                return calls[rank].site
        return calls[ranks[0]].site if ranks else (None, None)

    def difference(self) -> str:
        scope = "" if self.group is None else f" in group {list(self.group)}"
        text = ""
        if self.origin:
            first = self.origin[min(self.origin)].index + 1
            text = (f"their {_ordinal(first)} collectives{scope} came from different lines and were paired with each other ("
                    + _calls(self.origin, self.hosts()) + "); then ")
        present = {r: c for r, c in self.calls.items() if c is not None}
        absent = sorted(r for r, c in self.calls.items() if c is None)
        text += f"their {_ordinal(self.index + 1)} collective{scope} differs: " + _calls(present, self.hosts())
        if absent:
            verb = "never calls" if len(absent) == 1 else "never call"
            text += (", " if present else "") + f"{_ranks(absent)} {verb} one (the script ends there)"
        return text


def _sites(state: RankState, group: tuple[int, ...] | None) -> set[tuple[str | None, int | None]]:
    return {call.site for call in state.calls.get(group, [])}


def _by_call(calls: dict[int, Call]) -> list[tuple[Call, list[int]]]:
    """Ranks grouped by what they called (same op, shape and line)."""
    groups: list[tuple[Call, list[int]]] = []
    for rank in sorted(calls):
        call = calls[rank]
        for known, ranks in groups:
            if known.matches(call) and known.site == call.site:
                ranks.append(rank)
                break
        else:
            groups.append((call, [rank]))
    return groups


def _calls(calls: dict[int, Call], hosts: dict[int, str] | None = None) -> str:
    """`rank 0 calls X, ranks 1, 2 call Y` (with `on host` for the ranks of a job on several hosts)."""
    def who(ranks: list[int]) -> str:
        on = sorted({hosts[r] for r in ranks if r in hosts}) if hosts else []
        return _ranks(ranks) + (f" on {', '.join(on)}" if on else "")

    return ", ".join(f"{who(ranks)} {'calls' if len(ranks) == 1 else 'call'} {call.text()}" for call, ranks in _by_call(calls))


def _ranks(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(map(str, ranks))


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def divergences(states: list[RankState]) -> list[Divergence]:
    """The first disagreement of every group whose members all left a state (a sequence that
    stops early counts only when its rank ended normally: a running rank may still make the
    call, and a rank that crashed is explained by its crash)."""
    found = []
    for world in sorted({s.world for s in states}):
        members = {s.rank: s for s in states if s.world == world}
        if len(members) < 2 or set(members) != set(range(world)):
            continue
        groups = {group for state in members.values() for group in state.calls}
        for group in sorted(groups, key=lambda g: (g is not None, g or ())):
            ranks = sorted(members) if group is None else [r for r in group if r in members]
            if len(ranks) < 2 or (group is not None and len(ranks) != len(group)):
                continue
            divergence = _first_difference({r: members[r] for r in ranks}, group)
            if divergence is not None:
                found.append(divergence)
    return found


def _first_difference(states: dict[int, RankState], group: tuple[int, ...] | None) -> Divergence | None:
    sequences = {r: {c.index: c for c in s.calls.get(group, [])} for r, s in states.items()}
    starts = [min(seq) if seq else 0 for seq in sequences.values()]
    ends = [max(seq) + 1 if seq else 0 for seq in sequences.values()]
    origin: dict[int, Call] | None = None
    for index in range(max(starts), max(ends)):
        calls = {r: seq.get(index) for r, seq in sequences.items()}
        present = [c for c in calls.values() if c is not None]
        missing = [r for r, c in calls.items() if c is None]
        if missing and not all(states[r].ended_normally for r in missing):
            return None  # those ranks may still call it, or stopped early (crashed, killed)
        if missing or any(not present[0].matches(c) for c in present[1:]):
            return Divergence(group, index, calls, origin, states)
        if origin is None and len({c.site for c in present}) > 1:
            origin = {r: c for r, c in calls.items() if c is not None}
    return None


# -- at the end of the run ------------------------------------------------------------------------


def job_findings(folder: Path, findings: list[Finding], shared: list[dict[str, Any]], stopped: str | None) -> list[Finding]:
    """The run's findings with what only a comparison of the ranks shows (TD460, TD461, TD462,
    the stragglers of TD465: run/pace.py, and the rank behind a stall: run/stalled_ranks.py).
    Gradients that DDP did not average because some parameters got none are TD463's story."""
    unused_at = {(f.file, f.line) for f in findings if f.rule == UNUSED.code}  # the DDP wrapper's line
    replicas = [f for f in replica_findings(shared) if not ((f.file, f.line) in unused_at and (f.evidence or {}).get("phase") == "grad")]
    return collective_findings(folder, [*replicas, *straggler_findings(shared), *stalled_rank_findings(findings)], stopped)


def collective_findings(folder: Path, findings: list[Finding], stopped: str | None) -> list[Finding]:
    """The run's findings with TD461 added where the ranks' collectives differ, and TD462
    (collectives that failed) folded into it or told where the other ranks were."""
    states = read_states(folder)
    if len(states) < 2:
        return findings
    crashed = {rank for f in findings if (f.evidence or {}).get("exception") for rank in _ranks_of(f)}
    for state in states:
        if state.finished and state.completed is None:  # a forked rank: it ended normally unless it crashed
            state.completed = state.rank not in crashed
    failed = [f for f in findings if f.rule == TIMED_OUT.code]
    kept = [f for f in findings if f.rule != TIMED_OUT.code]
    if stopped:  # torchdoctor stopped the job: collectives that lost a peer then were cut off by the stop
        failed = [f for f in failed if not (f.evidence or {}).get("peer_gone")]
    added: list[Finding] = []
    explained: set[int] = set()
    for divergence in divergences(states):
        ranks = set(divergence.calls)
        folded = [f for f in failed if _ranks_of(f) & ranks]
        explained.update(id(f) for f in folded)
        added.append(_out_of_order(divergence, folded, stopped))
    for finding in failed:
        if id(finding) not in explained:
            kept.append(_told_where_others_were(finding, states))
    return [*added, *kept]


def _ranks_of(finding: Finding) -> set[int]:
    if finding.rank is not None:
        return {finding.rank}
    return set((finding.evidence or {}).get("ranks") or [])


def _out_of_order(divergence: Divergence, failed: list[Finding], stopped: str | None) -> Finding:
    by_how: dict[tuple[str, float | None], list[str]] = {}
    for finding in failed:
        evidence = finding.evidence or {}
        for rank in sorted(_ranks_of(finding)):
            by_how.setdefault(_how(evidence), []).append(FAILED_ON.format(op=evidence.get("op", "?"), rank=rank))
    outcome = "".join(OUTCOMES[kind].format(failed=" and ".join(what), **({"seconds": seconds} if seconds is not None else {}))
                      for (kind, seconds), what in by_how.items())
    if stopped:
        outcome += "; " + stopped
    file, line = divergence.location()
    evidence = {
        "group": list(divergence.group) if divergence.group is not None else "world",
        "index": divergence.index + 1,
        "calls": {str(r): c.text() if c else None for r, c in divergence.calls.items()},
        "ranks": sorted(divergence.calls),
    }
    hosts = {str(r): s.host for r, s in divergence.states.items() if s.host}
    if hosts:
        evidence["hosts"] = hosts
    return OUT_OF_ORDER.finding(file=file, line=line,
                                fields={"difference": divergence.difference(), "outcome": outcome}, evidence=evidence)


def _how(evidence: dict[str, Any]) -> tuple[str, float | None]:
    """How a collective failed (TD462's HOW): after its timeout of some seconds, or its peer gone."""
    if evidence.get("seconds") is not None:
        return "timed-out", float(evidence["seconds"])
    return ("peer-gone" if evidence.get("peer_gone") else "failed"), None


def _told_where_others_were(finding: Finding, states: list[RankState]) -> Finding:
    evidence = finding.evidence or {}
    mine = _ranks_of(finding)
    world = next((s.world for s in states if s.rank in mine), None)
    others = [s for s in states if s.rank not in mine and s.world == world]
    kind, seconds = _how(evidence)
    if not others or kind == "failed":
        return finding
    told = TIMED_OUT.finding(fields={"op": evidence.get("op", "?"), "others": "".join(_where(state) for state in others),
                                     **({"seconds": seconds} if seconds is not None else {})},
                             variant=None if kind == "timed-out" else kind)
    return replace(finding, message=told.message)


def _where(state: RankState) -> str:
    """Where another rank was (TD462's WHERE clause): waiting in a collective, or never joining it."""
    calls = state.calls.get(None, [])
    facts: dict[str, Any] = {"rank": state.rank, **({"host": state.host} if state.host else {})}
    on = "-on-host" if state.host else ""
    if state.waiting is not None:
        return WHERE["waiting" + on].format(call=state.waiting.text(), **facts)
    if state.ended_normally:
        never = "finished"
    elif state.host and not state.alive and not state.finished:  # another node tells whether its process lived
        never = "killed"
    else:
        never = "absent"
    if calls:
        return WHERE[never + on].format(last=calls[-1].text(), **facts)
    return WHERE[never + "-no-call" + on].format(**facts)


# -- while the job runs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Deadlock:
    """Every rank of a group stuck in collectives that can never match: why the job was stopped."""

    reason: str


class HangWatch:
    """Polled by the launcher while the script runs: a deadlock is confirmed when every rank of a
    group is stuck (or gone) and their collectives cannot match, unchanged for STOP_AFTER seconds.

    In a job on several nodes (run/nodes/) only the node of global rank 0 sees every rank (the
    others read only its card), and only it decides: it stops its part of the job and says so on
    its card; the others stop theirs when they read it, with the same reason, so that no node's
    ranks are cut off first."""

    def __init__(self, folder: Path, stop_after: float = STOP_AFTER) -> None:
        self.folder = folder
        self.stop_after = stop_after
        self._seen: tuple[Any, ...] | None = None
        self._since = 0.0
        self._leading: tuple[float, Deadlock] | None = None

    def check(self) -> Deadlock | None:
        states = read_states(self.folder) if any(True for _ in self.folder.glob("c*.json")) else []
        deadlock = self._decide(states)
        if not nodes_folder(self.folder).is_dir():
            return deadlock
        leader = next((node.stopping for node in remote_nodes(self.folder) if node.stopping), None)
        if leader is not None:
            return Deadlock(leader)
        if deadlock is not None and any(s.rank == 0 and s.here for s in states):
            if self._leading is None:  # the other nodes read it within a second or so, and stop theirs too
                write_json(nodes_folder(self.folder) / STOPPING, {"reason": deadlock.reason})
                self._leading = (time.monotonic(), deadlock)
        if self._leading is not None and time.monotonic() - self._leading[0] >= LEAD:
            return self._leading[1]
        return None

    def _decide(self, states: list[RankState]) -> Deadlock | None:
        if any(not s.known for s in states):  # another node's news stopped: decide nothing on old news
            self._seen = None
            return None
        if not any(s.stuck for s in states) or any(s.alive and not s.stuck and not s.finished for s in states):
            self._seen = None
            return None
        by_rank = {s.rank: s for s in states}
        stuck = [d for d in divergences(states) if any(by_rank[r].stuck for r in d.calls)]
        key = tuple(d.key for d in stuck)
        if not stuck:
            self._seen = None
            return None
        now = time.monotonic()
        if key != self._seen:
            self._seen, self._since = key, now
            return None
        if now - self._since < self.stop_after:
            return None
        waited = max(s.waited for s in states) + (now - self._since)
        timeouts = {s.timeout for s in states if s.timeout}
        limit = f" (the process group's timeout is {_duration(min(timeouts))})" if timeouts else ""
        return Deadlock(f"every rank waited there until torchdoctor stopped the job after {waited:.0f} s{limit}")


def _duration(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 120 else f"{seconds:g} s"


# -- replicated parameters ------------------------------------------------------------------------


def replica_findings(records: list[dict[str, Any]]) -> list[Finding]:
    """TD460: the first parameter and checked step where the replicas of a model differ."""
    replicas: dict[int, dict[int, dict[str, Any]]] = {}
    checkpoints: dict[int, dict[int, dict[int, dict[str, Any]]]] = {}
    for record in records:
        rank, number = record.get("rank"), record.get("optimizer")
        if not isinstance(rank, int) or not isinstance(number, int):
            continue
        if record.get("type") == "replicas":
            replicas.setdefault(number, {})[rank] = record
        elif record.get("type") == "checksums":
            checkpoints.setdefault(number, {}).setdefault(int(record["step"]), {})[rank] = record
    found = []
    for number, by_rank in sorted(replicas.items()):
        ranks = sorted(by_rank)
        first = by_rank[ranks[0]]
        if len(ranks) < 2 or any((by_rank[r]["names"], by_rank[r]["shapes"]) != (first["names"], first["shapes"]) for r in ranks):
            continue  # not the same model on every rank: not replicas
        finding = _first_divergence(first, ranks, checkpoints.get(number, {}))
        if finding is not None:
            found.append(finding)
    return found


PHASES = ("pre", "grad", "post")


def _first_divergence(info: dict[str, Any], ranks: list[int], steps: dict[int, dict[int, dict[str, Any]]]) -> Finding | None:
    previous: int | None = None
    for step in sorted(steps):
        by_rank = steps[step]
        if set(by_rank) != set(ranks):
            continue
        for phase in PHASES:
            vectors = {r: by_rank[r][phase] for r in ranks}
            reference = vectors[ranks[0]]
            differing = [i for i in range(len(reference)) if any(vectors[r][i] != reference[i] for r in ranks[1:])]
            if differing:
                return _diverged(info, ranks, step, previous, phase, differing, by_rank)
        previous = step
    return None


def _diverged(info: dict[str, Any], ranks: list[int], step: int, previous: int | None, phase: str,
              differing: list[int], by_rank: dict[int, dict[str, Any]]) -> Finding:
    index = differing[0]
    param = info["names"][index]
    reference = by_rank[ranks[0]][phase][index]
    odd = [r for r in ranks if by_rank[r][phase][index] != reference]
    facts: dict[str, Any] = {"param": param, "step": step, "odd": _ranks(odd), "reference": ranks[0]}
    ddp_at, bypass_at, synced_at = info.get("ddp_at"), info.get("bypass_at"), info.get("synced_at")
    at = ddp_at or info.get("optimizer_at")
    variant: str | None = None
    if phase == "pre" and previous is None:
        del facts["step"]
        if ddp_at:
            variant, facts["ddp_at"] = "changed-after-wrapping", _place(ddp_at)
        else:
            variant = "different-start-synced" if synced_at else "different-start"
            facts |= {"synced_at": _place(synced_at)} if synced_at else {}
            at = info.get("optimizer_at") or synced_at
    elif phase == "pre":
        variant, facts["previous"] = "changed-between-steps", previous
    elif phase == "grad":
        if bypass_at:
            variant, facts["bypass_at"], at = "wrapper-bypassed", _place(bypass_at), bypass_at
        elif ddp_at:
            variant = "not-averaged"
        else:
            at = synced_at or at
    else:
        lrs = {r: by_rank[r].get("lr") for r in ranks}
        if len({json.dumps(v) for v in lrs.values()}) > 1:
            variant, facts["lrs"] = "learning-rates-differ", "; ".join(f"rank {r}: {lrs[r]}" for r in ranks)
        else:
            variant = "update-differs"
        at = info.get("optimizer_at") or at
    file, line = (at[0], at[1]) if at else (None, None)
    evidence = {"parameter": param, "step": step, "phase": phase, "ranks": ranks, "differing_parameters": len(differing)}
    return DIVERGED.finding(file=file, line=line, fields=facts, variant=variant, evidence=evidence)


def _place(location: Any) -> str:
    return f"{display_path(location[0])}:{location[1]}" if location else "?"
