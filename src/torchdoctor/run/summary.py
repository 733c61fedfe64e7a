"""Turn what the observed processes wrote, and how the script ended, into the run's Report.

No torch here.
"""

from __future__ import annotations

import signal
from dataclasses import replace
from typing import Any

from torchdoctor.core.finding import Finding
from torchdoctor.core.locate import display_path
from torchdoctor.core.report import Report
from torchdoctor.rules.api.run_internal_error import RULE as INTERNAL_ERROR
from torchdoctor.rules.env.script_killed_by_signal import RULE as KILLED
from torchdoctor.run.boot import START_FAILED
from torchdoctor.run.launcher import Finished, Target
from torchdoctor.run.pace import table
from torchdoctor.run.records import RunRecords

#: the notice of a job torchdoctor stopped (another node's report says it otherwise: run/nodes/view.py)
STOPPED = "torchdoctor stopped the job: every rank was waiting in a collective that the others will never call (see TD461)"
#: signals that mean "someone stopped the run", not "the run crashed"
STOP_SIGNALS = {getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, n)}
#: signals whose cause TD002 says in a variant of its own (the others: a crash in native code)
KILL_VARIANTS = {"SIGKILL": "sigkill", "SIGBUS": "sigbus", "SIGSEGV": "sigsegv"}


def build(target: Target, finished: Finished, records: RunRecords, command: str = "run") -> Report:
    end = _end(finished)
    report = Report(command=command, stream="stderr", exit_status=finished.exit_status, script_end=end,
                    title=_title(target, end, finished, records, command), fatal_rules=frozenset({INTERNAL_ERROR.code}))
    report.findings = [_displayed(f) for f in records.findings]
    report.notices.extend(_notices(finished, records))
    killed = _killed_finding(finished)
    if killed is not None:
        report.add(killed)
    report.meta.update(
        {
            "exit_status": finished.exit_status,  # the script's own, as data
            "target": target.display(),
            "seconds": round(finished.seconds, 3),
            "steps": records.total("steps"),
            "processes": [
                {k: p.get(k) for k in ("pid", "role", "rank", "host", "node", "torch", "seconds", "stats", "summary") if k in p}
                for p in records.processes
            ],
        }
    )
    chosen = _series(records)
    if chosen is not None and chosen["series"]:
        report.sections["series"] = chosen["series"]
        report.meta["series_from"] = {"pid": chosen.get("pid"), "rank": chosen.get("rank"), "complete": bool(chosen.get("final"))}
    pace = table(records.shared)
    if pace:  # a job of several ranks: each rank's time per step, and its own part of it (run/pace.py)
        report.meta["pace"] = pace
    if records.memory:
        report.sections["memory"] = memory_section(records)
    if finished.signal is not None:
        report.meta["signal"] = _signal_name(finished.signal)
    if finished.stopped is not None:
        report.meta["stopped"] = finished.stopped
    return report


def _series(records: RunRecords) -> dict[str, Any] | None:
    """The `series` record of the process that trained: the script itself, else the lowest rank
    (under torchrun the script is the launcher), else the process that made the most steps."""
    if not records.series:
        return None
    roles = {p.get("pid"): p.get("role") for p in records.processes}
    steps = {p.get("pid"): int(p.get("stats", {}).get("steps", 0)) for p in records.processes}

    def preference(record: dict[str, Any]) -> tuple[int, int, int]:
        rank = record.get("rank")
        return (roles.get(record.get("pid")) != "main", rank if isinstance(rank, int) else 1 << 30, -steps.get(record.get("pid"), 0))

    return min(records.series, key=preference)


def memory_section(records: RunRecords) -> dict[str, Any]:
    """The report's `memory` section: each observed process's account and per-step series
    (observe/memory/timeline.py), the main process first."""
    roles = {p.get("pid"): p.get("role") for p in records.processes}
    accounts = sorted(records.memory, key=lambda m: (roles.get(m.get("pid")) != "main", m.get("rank") or 0, m.get("pid") or 0))
    return {"processes": [{k: v for k, v in account.items() if k != "type"} for account in accounts]}


def _displayed(finding: Finding) -> Finding:
    return replace(finding, file=display_path(finding.file)) if finding.file else finding


def _end(finished: Finished) -> str:
    """How the script ended, in the title's words (torchdoctor's own status is added after it)."""
    if finished.stopped is not None:
        return "stopped by torchdoctor (deadlock)"
    if finished.signal is not None:
        return f"killed by {_signal_name(finished.signal)}"
    return f"script exited {finished.exit_status}"


def _title(target: Target, end: str, finished: Finished, records: RunRecords, command: str = "run") -> str:
    parts = [f"torchdoctor {command} {target.display()}", end]
    steps, backward = records.total("steps"), records.total("backward")
    if steps:
        parts.append(f"{'at least ' if _lost(records) else ''}{steps} optimizer step{'s' if steps != 1 else ''}")
    elif backward:  # weights updated by hand: no torch optimizer
        parts.append(f"{backward} backward pass{'es' if backward != 1 else ''}, no torch optimizer")
    observed = [p for p in records.processes if p.get("torch") and (p.get("summary") != "lost" or _trains(p))]
    if len(observed) > 1:
        parts.append(f"{len(observed)} processes")
    parts.append(f"{finished.seconds:.1f} s")
    return " · ".join(parts)


def _notices(finished: Finished, records: RunRecords) -> list[str]:
    notes: list[str] = []
    if finished.stopped is not None:
        notes.append(STOPPED)
    elif finished.signal == signal.SIGINT:
        notes.append("the script was interrupted (Ctrl-C); the report covers what ran until then")
    elif finished.signal in STOP_SIGNALS:
        notes.append(f"the script was stopped by {_signal_name(finished.signal or 0)}; the report covers what ran until then")
    torch_used = any(p.get("torch") for p in records.processes)
    crashed = any(p.get("outcome") == "crashed" for p in records.processes) or finished.signal is not None
    lost = _lost(records)
    notes.extend(_lost_note(p) for p in lost)
    start_failed = any(note.startswith(START_FAILED) for p in records.processes for note in p.get("notes") or [])
    if start_failed:
        pass  # the process's own note says why nothing was observed
    elif not crashed and not torch_used:
        notes.append("the script never imported torch: there was nothing to observe")
    elif not crashed and not lost and records.total("steps") == 0 and records.total("backward") == 0:
        notes.append(
            "no training was observed: the script never called backward() or optimizer.step() "
            "(run the training entry point, or check that the loop is reached)"
        )
    for process in records.processes:
        for note in process.get("notes") or []:
            notes.append(f"pid {process.get('pid')}: {note}")
    return notes


def _lost(records: RunRecords) -> list[dict[str, Any]]:
    """Processes that used torch, ended without writing their summary (see records.lost_summary)
    and matter to the report: the script, a rank, or a process that trained. (DataLoader workers
    started by spawn are stopped with SIGTERM by design: nothing of theirs is lost.)"""
    return [p for p in records.processes if p.get("summary") == "lost" and _trains(p)]


def _trains(process: dict[str, Any]) -> bool:
    return process.get("role") in ("main", "rank") or bool(process.get("stats", {}).get("steps"))


def _lost_note(process: dict[str, Any]) -> str:
    """What is known of a process that ended abruptly, and what was lost, in words."""
    who = "the script" if process.get("role") == "main" else f"rank {process['rank']}" if process.get("rank") is not None else process.get("role") or "a process"
    if process.get("node") is not None:  # another node's process (run/nodes/)
        who += f" on {process.get('host') or '?'}"
    steps = process.get("stats", {}).get("steps", 0)
    counted = (f"at least {steps} optimizer step{'s' if steps != 1 else ''} (counted at steps 1, 2, 4, 8, ...)"
               if steps else "no optimizer step before it ended")
    return (f"pid {process.get('pid')} ({who}) ended without running its exit handlers (os._exit, or killed): "
            f"it imported torch and made {counted}; its end-of-run checks did not run and its exact counts were lost "
            "(the findings it reported before are listed)")


def _killed_finding(finished: Finished) -> Finding | None:
    if finished.signal is None or finished.signal in STOP_SIGNALS or finished.stopped is not None:
        return None
    name = _signal_name(finished.signal)
    return KILLED.finding(fields={"signal": name}, variant=KILL_VARIANTS.get(name), evidence={"signal": finished.signal})


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
