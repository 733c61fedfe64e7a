"""What every observed Python process does at start-up: the script, its workers, torchrun's ranks.

Nothing here imports torch. Observation starts the moment the program itself imports torch
(an import hook), so a child Python that never uses torch costs a few milliseconds. At exit
the process explains its crash, if it crashed, lets the detectors conclude, and writes a
summary record. Forked children (DataLoader workers) start their own record file.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from torchdoctor.core.finding import Finding
from torchdoctor.observe.faults import passes_through
from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.self_cost import CONFIG_KEY as PROFILE_SELF
from torchdoctor.run.records import CONFIG_FILE, ENV_DIR, ENV_PARENT, ProcessLog, finding_record

#: how a process's note starts when it imported torch but its observation could not start
START_FAILED = "could not start observing"


@dataclass
class ProcessState:
    """This process's place in the run: where it writes, what it is, what it observes with."""

    log: ProcessLog
    config: dict[str, Any]
    role: str
    started: float = field(default_factory=time.monotonic)
    session: Any = None  # torchdoctor.observe.session.Session, once torch is imported
    outcome: str = "completed"  # or "crashed", "interrupted" (set at exit)
    notes: list[str] = field(default_factory=list)


_STATE: ProcessState | None = None


def start() -> None:
    """Called by the bootstrap `sitecustomize` in every process started under `torchdoctor run`."""
    global _STATE
    folder = Path(os.environ[ENV_DIR])
    if not folder.is_dir():
        return
    _STATE = ProcessState(log=ProcessLog(folder), config=_read_config(folder), role=_role())
    _limit_memory(_STATE.config.get("memory_limit"))
    atexit.register(_at_exit)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork_in_child)
    if "torch" in sys.modules:
        _on_torch_imported(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _AfterImport("torch", _on_torch_imported))


def _limit_memory(limit: Any) -> None:
    """`torchdoctor run --memory-limit`: cap the data segment (the heap and every private
    writable mapping, which is where tensors live) so that an allocation beyond it fails the
    way it fails on a full machine: torch raises "DefaultCPUAllocator: can't allocate memory"."""
    if not isinstance(limit, int) or limit <= 0:
        return
    try:
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        cap = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
    except (ImportError, ValueError, OSError) as exc:
        _note(f"could not apply --memory-limit: {exc}")


def _read_config(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _role() -> str:
    parent = os.environ.get(ENV_PARENT, "")
    if parent.isdigit() and os.getppid() == int(parent):
        return "main"
    if os.environ.get("TORCHELASTIC_RUN_ID") is not None or os.environ.get("LOCAL_RANK") is not None:
        return "rank"
    return "child"


def current_rank() -> int | None:
    """The distributed rank of this process when known (initialised process group, or RANK)."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:  # noqa: BLE001 - a half-torn-down process group must not stop the report
        pass
    rank = os.environ.get("RANK")
    return int(rank) if rank is not None and rank.isdigit() else None


def emit(finding: Finding, key: str) -> None:
    """Write one finding (or its updated count) to this process's record file."""
    if _STATE is None:
        return
    if finding.rank is None:
        rank = current_rank()
        if rank is not None:
            finding = replace(finding, rank=rank)
    _STATE.log.write(finding_record(finding, key=key, pid=os.getpid()))


def _record(data: dict[str, Any]) -> None:
    """Write a record other than a finding (checksums of a rank, progress, ...), with this process's rank."""
    if _STATE is None:
        return
    if data.get("type") in ("torch", "progress"):
        if _STATE.role == "forked":
            return  # a forked child always ends with os._exit: it never writes a summary to lose
        data = {**data, "role": _STATE.role}
    _STATE.log.write({**data, "pid": os.getpid(), "rank": current_rank()})


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `callback(module)` right after `name` has been imported (Python has no post-import hook).

    It finds the module with the other finders and shadows the loader's `exec_module` with an
    instance attribute that removes itself on first use: the module keeps its real loader,
    so nothing in the program can tell.
    """

    def __init__(self, name: str, callback: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.callback = callback

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        real_exec = loader.exec_module
        callback = self.callback

        @passes_through
        def exec_module(module: ModuleType) -> None:
            del loader.exec_module  # back to the class's method for any later use
            real_exec(module)
            try:
                callback(module)
            except Exception as exc:  # noqa: BLE001 - observing must never break the import
                _note(f"{START_FAILED}: {type(exc).__name__}: {exc}")

        loader.exec_module = exec_module
        return spec


def _note(text: str) -> None:
    if _STATE is not None:
        _STATE.notes.append(text)


def config() -> dict[str, Any]:
    """What the runner asked of this process (the run folder's config.json; {} outside a run)."""
    return _STATE.config if _STATE is not None else {}


def _on_torch_imported(torch: ModuleType) -> None:
    if _STATE is None:
        return
    from torchdoctor.observe import tracebacks
    from torchdoctor.observe.crash.explain import explainers
    from torchdoctor.observe.detectors import all_detectors
    from torchdoctor.observe.session import Session

    explainers()  # imported now rather than at exit (see _at_exit)
    tracebacks.install()  # from now on torchdoctor's frames are in the user's calls
    enabled = _STATE.config.get("enabled")
    extra = tuple(_detector(name) for name in _STATE.config.get("detectors") or ())
    _STATE.session = Session.start(
        emit=emit, enabled=frozenset(enabled) if enabled is not None else None, record=_record, folder=_STATE.log.folder,
        detectors=(*all_detectors(), *extra), profile_self=bool(_STATE.config.get(PROFILE_SELF)),
    )
    _STATE.notes.extend(_STATE.session.notices)  # detectors this torch lacks an API for
    # said now, so that a process that never reaches its exit handlers (os._exit, a signal) is not
    # reported as one that never used torch
    _record({"type": "torch"})


def _detector(name: str) -> Any:
    """A detector class another command adds to run's (`package.module:Class`; `trace` adds its
    step tracer this way)."""
    import importlib

    module, _, attribute = name.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _after_fork_in_child() -> None:
    """A forked child (a DataLoader worker, a `fork` Process) writes its own file."""
    if _STATE is None:
        return
    _STATE.log = ProcessLog(_STATE.log.folder)
    _STATE.role = "forked"
    _STATE.notes = []  # the parent's are in the parent's record
    if _STATE.session is not None:
        _STATE.session.after_fork()


def _at_exit() -> None:
    """Explain a crash, let the detectors conclude, write this process's summary.

    Nothing imported or defined here may create a dataclass or a namedtuple: those compile
    source strings, and compiling a string at exit makes CPython forget that a KeyboardInterrupt
    ended the program, so it would exit with status 1 instead of dying from SIGINT (130). The
    modules this needs are imported when observation starts.
    """
    if _STATE is None:
        return
    try:
        _finish(_STATE)
    except Exception as exc:  # noqa: BLE001 - the report must still be written
        _STATE.notes.append(f"observation failed at exit: {type(exc).__name__}: {exc}")
    _STATE.log.write(_process_record(_STATE))
    _STATE.log.close()


def _finish(process: ProcessState) -> None:
    exception = getattr(sys, "last_value", None)
    outcome = Outcome.from_exception(exception)
    process.outcome = "crashed" if outcome.crashed else "interrupted" if outcome.interrupted else "completed"
    session = process.session
    if outcome.crashed and outcome.exception is not None:
        from torchdoctor.observe.crash.explain import explain

        for finding, key in explain(outcome.exception, session):
            emit(finding, key)
    if session is not None:
        session.finish(outcome)


def _process_record(process: ProcessState) -> dict[str, Any]:
    session = process.session
    return {
        "type": "process",
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "role": process.role,
        "rank": current_rank(),
        "argv": list(sys.argv),
        "torch": session is not None,
        "outcome": process.outcome,
        "seconds": round(time.monotonic() - process.started, 3),
        "stats": session.stats() if session is not None else {},
        **({"self_cost": session.cost.rows()} if session is not None and session.cost is not None else {}),
        "notes": process.notes,
    }
