"""Per-process record files: every observed process appends what it finds, the runner merges.

Why files, one JSON object per line, written as soon as a finding is made: a DataLoader
worker, a torchrun rank or the script itself may end abruptly (`os._exit`, a signal, the
kernel's out-of-memory killer). Whatever was written before the end still reaches the report.

No torch here: the runner (which never imports torch) reads these files.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from torchdoctor.core.finding import Category, Finding, Severity

#: the folder the runner gives every observed process (environment variable)
ENV_DIR = "TORCHDOCTOR_RUN_DIR"
#: the pid of the `torchdoctor run` process, so the script's own process knows it is the main one
ENV_PARENT = "TORCHDOCTOR_RUN_PARENT"
CONFIG_FILE = "config.json"
_NUMBERS = re.compile(r"\d+")
#: record types (besides findings and process summaries) that the runner compares across ranks
SHARED = ("replicas", "checksums", "pace")


def collectives_path(folder: Path, pid: int) -> Path:
    """The state file of one rank's collectives (rewritten whole; see instruments/distributed.py)."""
    return folder / f"c{pid}.json"


class ProcessLog:
    """Appends records of one process to `<folder>/p<pid>-<start>.jsonl` (opened on first write)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / f"p{os.getpid()}-{time.monotonic_ns()}.jsonl"
        self._file: Any = None

    def write(self, record: dict[str, Any]) -> None:
        try:
            if self._file is None:
                self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open on purpose
            self._file.write(json.dumps(record, default=str) + "\n")
            self._file.flush()
        except OSError:
            pass  # the run folder vanished (the runner was killed): nothing left to report to

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def finding_record(finding: Finding, *, key: str, pid: int) -> dict[str, Any]:
    """A finding as written by a process: the contract's JSON plus the dedup key and the pid."""
    return {"type": "finding", "key": key, "pid": pid, "finding": finding.to_dict()}


def finding_from_dict(data: dict[str, Any]) -> Finding:
    """The inverse of `Finding.to_dict` (columns there are 1-based, here 0-based)."""
    column = data.get("column")
    end_column = data.get("end_column")
    return Finding(
        rule=data["rule"],
        name=data["name"],
        category=Category(data["category"]),
        severity=Severity(data["severity"]),
        message=data["message"],
        hint=data["hint"],
        file=data.get("file"),
        line=data.get("line"),
        column=column - 1 if isinstance(column, int) else None,
        end_line=data.get("end_line"),
        end_column=end_column - 1 if isinstance(end_column, int) else None,
        evidence=data.get("evidence"),
        count=int(data.get("count", 1)),
        rank=data.get("rank"),
    )


@dataclass
class RunRecords:
    """Everything the observed processes wrote, merged."""

    findings: list[Finding] = field(default_factory=list)
    processes: list[dict[str, Any]] = field(default_factory=list)
    #: records the runner compares across ranks (`replicas`, `checksums`; see run/ranks.py)
    shared: list[dict[str, Any]] = field(default_factory=list)
    #: the last `series` record of each process that wrote one (observe/instruments/series.py)
    series: list[dict[str, Any]] = field(default_factory=list)
    #: what `torchdoctor trace`'s tracer wrote (trace/tracer.py)
    traces: list[dict[str, Any]] = field(default_factory=list)
    #: each process's latest memory account (observe/detectors/memory_account.py)
    memory: list[dict[str, Any]] = field(default_factory=list)

    def total(self, stat: str, role: str | None = None) -> int:
        """The sum of one statistic (`steps`, `backward`, ...) over the processes (of one role)."""
        return sum(int(p.get("stats", {}).get(stat, 0)) for p in self.processes if role is None or p.get("role") == role)


def read_files(files: Iterable[tuple[Path, dict[str, Any]]]) -> RunRecords:
    """Read and merge the record files of every process, each with where it ran (unreadable
    lines are skipped, never fatal). run/nodes/view.py's `read_folder` finds the files."""
    per_process: dict[str, dict[str, Finding]] = {}
    processes: list[dict[str, Any]] = []
    shared: list[dict[str, Any]] = []
    series: list[dict[str, Any]] = []
    traces: list[dict[str, Any]] = []
    memory: list[dict[str, Any]] = []
    for path, where in files:
        latest: dict[str, Finding] = {}
        account: dict[str, Any] | None = None
        summary: dict[str, Any] | None = None
        last_series: dict[str, Any] | None = None
        before_end: dict[str, Any] = {}  # the "torch" and latest "progress" records
        for record in _records(path):
            if record.get("type") == "finding":
                try:
                    latest[str(record["key"])] = finding_from_dict(record["finding"])
                except (KeyError, ValueError, TypeError):
                    continue
            elif record.get("type") == "process":
                summary = record
            elif record.get("type") in ("torch", "progress"):
                before_end[record["type"]] = record
            elif record.get("type") in SHARED:
                shared.append(record)
            elif record.get("type") == "series" and isinstance(record.get("series"), dict):
                last_series = record
            elif record.get("type") == "trace":
                traces.append(record)
            elif record.get("type") == "memory":
                account = record
        per_process[str(path)] = latest
        if last_series is not None:
            series.append(last_series)
        if account is not None:
            memory.append(account)
        if summary is None and before_end:
            summary = lost_summary(before_end)
            if "node" in where:  # another node's: its summary did not come before the report, not lost
                summary["summary"] = "not arrived"
        if summary is not None:
            processes.append({**summary, **where})
    findings = merge(f for found in per_process.values() for f in found.values())
    return RunRecords(findings=findings, processes=processes, shared=shared, series=series, traces=traces, memory=memory)


def lost_summary(before_end: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The summary of a process that ended without writing one (os._exit, a signal), from what it
    wrote before: it used torch, and its counts at its last progress record (a lower bound)."""
    first = before_end.get("torch") or before_end["progress"]
    progress = before_end.get("progress", {})
    return {
        "type": "process", "pid": first.get("pid"), "role": first.get("role"), "rank": progress.get("rank", first.get("rank")),
        "torch": True, "outcome": "unknown", "summary": "lost",
        "stats": {k: int(progress[k]) for k in ("steps", "backward") if isinstance(progress.get(k), int)},
    }


def _records(path: Path) -> Iterable[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut short by a process that died while writing it
        if isinstance(record, dict):
            yield record


def merge(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per (rule, place, message) across processes: ranks seen are kept as evidence.

    The same bug in every rank of a distributed job is one finding, not one per rank; a
    finding seen on a single rank keeps that rank. Messages that differ only in their numbers
    ("... for rank 0: 4 5" / "... for rank 1: 4 5", a port, a pid) are the same finding: the
    lowest rank's message is shown and every rank's is kept in `evidence["messages"]`. `count`
    is the most times one process saw it.
    """
    groups: dict[tuple[Any, ...], list[Finding]] = {}
    for finding in sorted(findings, key=lambda f: (f.rank is None, f.rank or 0)):
        groups.setdefault((finding.rule, finding.file, finding.line, _NUMBERS.sub("#", finding.message)), []).append(finding)
    merged: list[Finding] = []
    for group in groups.values():
        first = group[0]
        ranks = sorted({f.rank for f in group if f.rank is not None})
        count = max(f.count for f in group)
        if len(group) == 1:
            merged.append(first)
            continue
        evidence = dict(first.evidence or {})
        if len(ranks) > 1:
            evidence["ranks"] = ranks
        if len({f.message for f in group}) > 1:
            evidence["messages"] = {str(f.rank if f.rank is not None else i): f.message for i, f in enumerate(group)}
        merged.append(replace(first, count=count, rank=ranks[0] if len(ranks) == 1 else None, evidence=evidence or None))
    return merged
