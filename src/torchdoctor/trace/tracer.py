"""The step tracer: profiles a bounded number of training steps of the observed script.

`torchdoctor trace` adds this detector to run's (run/boot.py reads it from the run folder's
config). It counts steps on the first optimizer that steps (or on backward() calls when the
script updates its weights by hand), lets `skip` steps run, then profiles `steps` steps with
torch's profiler and the line marks (trace/marks.py), and when they are done, or when the
script ends or crashes before that, stops both, attributes the events to user lines and
writes one `trace` record for the runner. After that the script runs on with only run's
hooks, or, with `stop`, ends (SystemExit(0) from the step that ended the trace).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch._C._profiler import _RecordFunctionFast

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.introspect import dispatcher as dispatch
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Backward, LoaderIter, Step
from torchdoctor.observe.faults import FAULTS
from torchdoctor.observe.instruments.optim import params_of
from torchdoctor.observe.outcome import Outcome
from torchdoctor.run import boot
from torchdoctor.trace import chrome, oppath, record
from torchdoctor.trace.attribute import attribute
from torchdoctor.trace.events import collect
from torchdoctor.trace.heap import keep_heap
from torchdoctor.trace.marks import LineMarks
from torchdoctor.trace.options import CONFIG_KEY, STEP_PREFIX, TraceOptions

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed


class StepTracer(Detector):
    """See the module's doc. `result` holds the record once tracing ended (for in-process use)."""

    rules = ()  # it reports nothing: trace/diagnose.py reads its record
    #: set by in-process callers (tests); under `torchdoctor trace` the run folder's config says
    options: ClassVar[TraceOptions | None] = None

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self.opts = type(self).options or TraceOptions.from_dict(boot.config().get(CONFIG_KEY))
        self._leader: int | None = None
        self._count = 0
        self._traced = 0
        self.profile: Any = None
        self.marks: LineMarks | None = None
        self.result: dict[str, Any] | None = None
        self.state = "waiting"  # "tracing", "done"
        self._loop: tuple[str, int] | None = None  # the line that iterates the DataLoader
        self._cpu: list[int] = []  # the training thread's CPU time at each step boundary (ns)
        self._forks = False

    # -- the step clock ---------------------------------------------------------------------

    def on_step_end(self, event: Step) -> None:
        if self._leader is None:
            self._leader = id(event.optimizer)
        if id(event.optimizer) == self._leader:
            self._tick()

    def on_backward_end(self, event: Backward) -> None:
        if not self.ctx.optimizers.known:  # weights updated by hand: a backward() is a step
            self._tick()

    def on_loader_iter(self, event: LoaderIter) -> None:
        """The `for batch in loader:` line: a fetch that makes no torch call of its own in this
        process (the batch comes from workers) is that line's wait."""
        self._loop = caller_in_user_code()

    def on_finish(self, outcome: Outcome) -> None:
        if self.state == "tracing":
            self._stop("crashed" if outcome.crashed else "interrupted" if outcome.interrupted else "exited")

    def _tick(self) -> None:
        self._count += 1
        if self.state == "waiting" and self._count >= self.opts.skip:
            self._start()
        elif self.state == "tracing":
            self._traced += 1
            self._mark_step()
            if self._traced >= self.opts.steps:
                self._stop("steps")
                if self.opts.stop:
                    raise SystemExit(0)

    # -- tracing ----------------------------------------------------------------------------

    def _start(self) -> None:
        if torch.autograd._profiler_enabled():  # the script profiles itself: one profiler at a time
            self.state = "done"
            self.result = {"type": "trace", "ended": "profiler-in-use", "traced": 0, "lines": [], "steps": [], "total_us": 0}
            self.ctx.record(self.result)
            return
        self.state = "tracing"
        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self.profile = torch.profiler.profile(activities=activities, record_shapes=True)
        with _quiet_stderr():
            self.profile.start()
        self.marks = LineMarks()
        self.marks.begin()
        self.ctx.set_aside(self.marks)
        if not self._forks and hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forked)
            self._forks = True
        self._mark_step()

    def _forked(self) -> None:
        """In a DataLoader worker forked while tracing: the trace is the parent's. The marks come
        off the worker's copy of the mode stack; the profiler is left as torch leaves it for a
        worker forked under any profiler."""
        if self.state != "tracing":
            return
        self.state = "done"
        if self.marks is not None:
            self.marks.end()
            self.ctx.stop_setting_aside(self.marks)
        self.marks, self.profile = None, None

    def _mark_step(self) -> None:
        self._cpu.append(time.thread_time_ns())
        with _RecordFunctionFast(f"{STEP_PREFIX}{self._traced}"):
            pass

    def _stop(self, ended: str) -> None:
        self.state = "done"
        marks, profile = self.marks, self.profile
        if marks is not None:
            marks.end()
            self.ctx.stop_setting_aside(marks)
        try:
            with _quiet_stderr():
                profile.stop()
            events = collect(profile)
        except Exception as exc:  # noqa: BLE001 - a profiler that failed must not stop the script
            FAULTS.add("the trace's profiler", exc)
            events = []
        facts = marks.lines if marks is not None else {}
        loop = marks.line_name(*self._loop) if marks is not None and self._loop is not None else None
        attribution = attribute(events, data_line=loop)
        cpu = [b - a for a, b in zip(self._cpu, self._cpu[1:])]
        found = record.build(attribution, facts, served=_served, cpu_ns=cpu)
        found.update({
            "requested": self.opts.steps, "skip": self.opts.skip, "traced": self._traced, "ended": ended,
            "stop": self.opts.stop, "parameters": self._parameters(),
            # library kernels turned off (a read: neither initialises CUDA)
            "backends": {"cudnn": bool(torch.backends.cudnn.enabled), "mkldnn": bool(torch.backends.mkldnn.enabled)},
        })
        _mark_autocast_ops(found)
        found["paths"] = _paths(found, self.opts)
        if self.opts.chrome:
            found["chrome"] = _write_chrome(self.opts.chrome, events, attribution, found)
        self.result = found
        self.ctx.record(found)
        self.marks = None
        if self.ctx.folder is not None:
            self.profile = None  # in a traced script: its memory back; in process (tests) it stays readable
            del profile, events, attribution
            keep_heap()  # the steps after the trace do not pay for its freed memory (trace/heap.py)

    def _parameters(self) -> dict[str, Any]:
        """The trained parameters' dtypes and devices (elements of each), once."""
        dtypes: dict[str, int] = {}
        devices: dict[str, int] = {}
        for optimizer in list(self.ctx.optimizers.known):
            for p in params_of(optimizer):
                dtype = str(p.dtype).replace("torch.", "")
                dtypes[dtype] = dtypes.get(dtype, 0) + p.numel()
                devices[p.device.type] = devices.get(p.device.type, 0) + p.numel()
        return {"dtypes": dtypes, "devices": devices}


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """The profiler's start and stop print a line each on the process's stderr (kineto's
    `USDT: ... profiler_start`): the script's stderr stays what it is without torchdoctor."""
    try:
        sys.stderr.flush()
        saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError):
        yield
        return
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _served(name: str, signature: list[str], keys: list[str]) -> list[dict[str, str]]:
    op = dispatch.overload_for(name, signature, oppath.all_ops())
    if op is None:
        return []
    return [{"key": s.key, "kind": s.kind, "op": op} for s in dispatch.served_by(op, set(keys))]


def _mark_autocast_ops(found: dict[str, Any]) -> None:
    """On lines run inside an autocast region: the float32 ops autocast has a kernel for on the
    device they ran on (it would have lowered their precision had it been on for that device)."""
    for line in found["lines"]:
        if not line["autocast"]:
            continue
        eligible = []
        for op in line["ops"]:
            chain = op.get("dispatch")
            if not chain or "float32" not in op["dtypes"]:
                continue
            rows = dispatch.table(chain[0]["op"])
            for device in line["devices"]:
                row = rows.get("Autocast" + str(torch._C._dispatch_key_for_device(device)))
                if row is not None and not row.fallthrough and row.kind == "kernel":
                    eligible.append(op["op"])
                    break
        line["autocast_ops"] = eligible


def _paths(found: dict[str, Any], opts: TraceOptions) -> list[dict[str, Any]]:
    """The whole op path for the lines and ops the user named, with the keys that served them."""
    paths: list[dict[str, Any]] = []
    wanted = [line for line in found["lines"] if any(_same_line(line, asked) for asked in opts.lines)]
    for asked in opts.ops:
        try:
            name = oppath.resolve(asked)
        except Exception as exc:  # noqa: BLE001 - a bad name is the runner's to report
            paths.append({"op": asked, "error": str(exc)})
            continue
        calls = [line for line in found["lines"] for op in line["ops"] if op.get("dispatch") and op["dispatch"][0]["op"] == name]
        keys = set(calls[0]["dispatch_keys"]) if calls else None
        paths.append({**oppath.path_of(name, keys=keys).to_dict(), "lines": [c["location"] for c in calls]})
    for line in wanted:
        for op in line["ops"]:
            if op.get("dispatch"):
                path = oppath.path_of(op["dispatch"][0]["op"], keys=set(line["dispatch_keys"]))
                paths.append({**path.to_dict(), "lines": [line["location"]]})
    for asked in opts.lines:
        if not any(_same_line(line, asked) for line in wanted):
            paths.append({"line": asked, "error": "no torch call was made on this line during the traced steps"})
    return paths


def _same_line(line: dict[str, Any], asked: str) -> bool:
    """`train.py:42` names this line (by its path as shown, or by the file's own name)."""
    file, _, number = asked.rpartition(":")
    if not number.isdigit() or line.get("line") != int(number):
        return False
    shown = line["location"].rsplit(":", 1)[0]
    return shown == file or os.path.basename(shown) == os.path.basename(file) or os.path.abspath(file) == line.get("file")


def _write_chrome(path: str, events: list[Any], attribution: Any, found: dict[str, Any]) -> str | None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(chrome.trace(events, attribution, found, pid=os.getpid()), handle)
        return os.path.abspath(path)
    except OSError as exc:
        FAULTS.add("writing the Chrome trace", exc)
        return None

