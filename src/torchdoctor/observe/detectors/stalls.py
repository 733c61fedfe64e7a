"""TD497: the training stalled. Where every thread waits, once, without stopping the job.

Per step and per batch the detector only notes the time (`perf_counter`, a deque append). A
watchdog thread, started after MIN_STEPS optimizer steps, wakes every TICK and compares the
time since the last step or batch with the limit: FACTOR times the median of the last step
intervals, and at least the stall timeout (`--stall-timeout`, the environment's
TORCHDOCTOR_STALL_TIMEOUT, else DEFAULT_TIMEOUT seconds; 0 turns it off). A busy machine makes
no stall: the watchdog decides only on two consecutive checks past the limit that it made on
time (a wake-up late by more than half a tick starts the count again), and a main thread inside
`torch.compile` is compiling, not waiting.

Then `sys._current_frames()` gives every thread's stack. The main thread's innermost user line
is where the training waits, and its library frames say on what: a DataLoader fetch (from
which worker, for which samples: instruments/batch_indices.py), a collective, a lock or a queue,
I/O. The worker processes cannot be read from here: each registers `faulthandler` on SIGUSR2 at
its first fetch (only where nothing else handles that signal), and the watchdog asks the worker
it waits for to write its stacks to a file, to name the dataset line the worker is at.
"""

from __future__ import annotations

import faulthandler
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
import traceback
from collections import deque
from pathlib import Path
from typing import Any, NamedTuple

from torchdoctor.core.locate import is_user_file
from torchdoctor.introspect.frames import read_locals
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Batch, Location, Step
from torchdoctor.observe.instruments.batch_indices import BatchIndices
from torchdoctor.observe.instruments.distributed import DistributedIndex
from torchdoctor.observe.instruments.worker_fetch import FirstFetch
from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.support import place, setting
from torchdoctor.rules.performance.training_stalled import RULE

DEFAULT_TIMEOUT = 60.0
ENV_TIMEOUT = "TORCHDOCTOR_STALL_TIMEOUT"
FACTOR = 50.0
MIN_STEPS = 5
#: step intervals kept for the median
INTERVALS = 64
#: frames kept per thread in the evidence
FRAMES = 12
#: how long the watchdog waits for a worker to write its stacks
WORKER_DUMP_WAIT = 0.5
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')
_COMPILING = (f"torch{os.sep}_dynamo{os.sep}", f"torch{os.sep}_inductor{os.sep}")
_LOADER = f"torch{os.sep}utils{os.sep}data{os.sep}dataloader.py"
_DISTRIBUTED = f"torch{os.sep}distributed{os.sep}"
_DDP = f"torch{os.sep}nn{os.sep}parallel{os.sep}distributed.py"
_BACKWARD = (f"torch{os.sep}autograd{os.sep}", ("backward", "_engine_run_backward", "grad"))
_LOCKS = {"threading.py": ("wait", "acquire", "join", "_wait_for_tstate_lock"), "queue.py": ("get", "put")}
_IO = ("socket.py", "ssl.py", "selectors.py", "subprocess.py", "client.py", "connection.py", "urllib", "requests", "http")


class Wait(NamedTuple):
    """What a stalled main thread waits on: its kind (the evidence's `waits_on`, which the runner
    compares across ranks: run/stalled_ranks.py), the words, the fix, and the line."""

    kind: str  # "loader", "collective", "lock", "io" or "call"
    where: str
    remedy: str
    at: Location | None
    #: the collective waited in, as the message names it
    collective: str | None = None


class Stalls(Detector):
    ORDER = 145
    rules = (RULE,)

    def install(self) -> None:
        self.timeout = float(setting("stall_timeout", ENV_TIMEOUT, DEFAULT_TIMEOUT))
        self._last = time.perf_counter()
        self._last_step: float | None = None
        self._intervals: deque[float] = deque(maxlen=INTERVALS)
        self._steps = 0
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._pid = os.getpid()
        self._stacks: Path | None = None
        self._own_stacks = False
        self.reported = False
        if self.timeout <= 0:
            return
        self._indices = self.ctx.instrument(BatchIndices)
        self._distributed = self.ctx.instrument(DistributedIndex)
        if hasattr(faulthandler, "register") and hasattr(signal, "SIGUSR2"):
            if self.ctx.folder is not None:
                self._stacks = Path(self.ctx.folder) / "stacks"
            else:
                self._stacks, self._own_stacks = Path(tempfile.mkdtemp(prefix="torchdoctor-stacks-")), True
            self.ctx.instrument(FirstFetch).listen(_WorkerStacks(self._stacks))

    def on_batch(self, event: Batch) -> None:
        self._last = time.perf_counter()

    def on_step_end(self, event: Step) -> None:
        now = time.perf_counter()
        if self._last_step is not None:
            self._intervals.append(now - self._last_step)
        self._last_step = self._last = now
        self._steps += 1
        if self._thread is None and self._steps >= MIN_STEPS and self.timeout > 0 and os.getpid() == self._pid:
            self._thread = threading.Thread(target=self._watch, name="torchdoctor-stall-watchdog", daemon=True)
            self._thread.start()

    def on_finish(self, outcome: Outcome) -> None:
        self._stop.set()
        if self._own_stacks and self._stacks is not None and os.getpid() == self._pid:
            shutil.rmtree(self._stacks, ignore_errors=True)

    # -- the watchdog thread ------------------------------------------------------------------

    def _watch(self) -> None:
        tick = min(max(self.timeout / 4, 0.05), 2.0)
        over = 0
        expected = time.perf_counter() + tick
        while not self._stop.wait(tick):
            now = time.perf_counter()
            late = now - expected > tick / 2
            expected = now + tick
            if late:
                over = 0  # the machine is busy: this check tells nothing
                continue
            try:
                intervals = list(self._intervals)
            except RuntimeError:  # the deque changed while copied: next time
                continue
            median = statistics.median(intervals) if intervals else 0.0
            waited = now - self._last
            if waited < max(self.timeout, FACTOR * median):
                over = 0
                continue
            over += 1
            if over < 2:
                continue
            try:
                if self._conclude(waited, median):
                    return
            except Exception as exc:  # noqa: BLE001 - the watchdog must never break the run
                from torchdoctor.observe.faults import FAULTS

                FAULTS.add("the stall watchdog", exc)
                return
            over = 0

    def _conclude(self, waited: float, median: float) -> bool:
        """Dump the threads and report; False when the main thread is compiling (not a stall)."""
        frames = sys._current_frames()
        main = threading.main_thread()
        names = {thread.ident: thread.name for thread in threading.enumerate()}
        stacks = {ident: traceback.extract_stack(frame) for ident, frame in frames.items()
                  if ident != threading.get_ident()}
        main_stack = stacks.get(main.ident or -1)
        if main_stack is None:
            return True
        if any(any(part in entry.filename for part in _COMPILING) for entry in main_stack):
            return False
        user = next(((entry.filename, entry.lineno or 0) for entry in reversed(main_stack) if is_user_file(entry.filename)), None)
        wait = self._waits_on(main_stack, frames.get(main.ident or -1), user)
        step = self._steps
        self.reported = True
        threads = {f"{names.get(ident, 'thread')} ({ident})": [f"{e.filename}:{e.lineno} in {e.name}" for e in stack[-FRAMES:]]
                   for ident, stack in stacks.items()}
        evidence = {"waited_s": round(waited, 3), "median_step_s": round(median, 6), "steps": step,
                    "waits_on": wait.kind, "threads": threads}
        if wait.collective is not None:
            evidence["collective"] = wait.collective
        self.ctx.report(RULE, at=wait.at or user, key="stall",
                        fields={"waited": waited, "step": step, "median": _seconds(median), "where": wait.where,
                                "remedy": wait.remedy, "behind": ""},
                        evidence=evidence)
        series = self.ctx.series
        if series is not None:
            label = f"stall: {waited:.0f} s without a step"
            series.table("step_time").mark(series.step + 1, RULE.code, label)
            series.table("loss").mark(series.step + 1, RULE.code, label)
        return True

    def _waits_on(self, stack: traceback.StackSummary, frame: Any, user: Location | None) -> Wait:
        """What the main thread waits on, the fix, and the line to point at (a worker's, when known)."""
        line = f"the main thread waits at {place(user)}" if user else "the main thread waits"
        files = [(entry.filename, entry.name) for entry in stack]
        if any(name.endswith(_LOADER) and func in ("_get_data", "_try_get_data", "_next_data") for name, func in files):
            return self._loader_wait(line, frame, user)
        collective = next((f"`{func}`" for name, func in reversed(files)
                           if _DISTRIBUTED in name and not func.startswith("_") and func != "wrapper"), None)
        if collective is None:
            collective = self._ddp_wait(files)
        if collective is not None:
            return Wait("collective", f"{line}, in {collective}: another rank has not reached it (the rank behind is the "
                        f"one that reports a stall elsewhere, or has completed fewer steps than this one's {self._steps})",
                        "Find the rank behind (its own finding says where it waits) and make every rank reach the same "
                        "collectives in the same order; a rank that skips one (a condition on the rank, a data split of "
                        "unequal length) leaves the others waiting.", user, collective)
        innermost = files[-1] if files else ("", "")
        for suffix, functions in _LOCKS.items():
            if innermost[0].endswith(suffix) and innermost[1] in functions:
                return Wait("lock", f"{line}, on a lock or a queue (`{suffix[:-3]}.{innermost[1]}`)",
                            "Something holds that lock or never fills that queue: take locks in one order, give waits a "
                            "timeout, and check the thread that should put or release.", user)
        if any(any(part in name for part in _IO) for name, _ in files[-4:]):
            return Wait("io", f"{line}, on I/O (`{innermost[1]}` in {os.path.basename(innermost[0])})",
                        "The read or the request does not return: give it a timeout, and read the data before training, "
                        "or from a local copy.", user)
        return Wait("call", f"{line} (a call there has not returned)",
                    "See what that line waits for in the stacks of the threads (the evidence): a call that blocks, a "
                    "sleep, a loop that does not end.", user)

    def _ddp_wait(self, files: list[tuple[str, str]]) -> str | None:
        """DDP's own collectives, which run in C++ and leave no torch.distributed frame: the buffers'
        broadcast in its forward, the gradients' all-reduce in backward()."""
        if self._distributed.world < 2 or not len(self._distributed.ddp):
            return None
        if any(name.endswith(_DDP) for name, _ in files):
            return "DistributedDataParallel's forward (its buffers' broadcast)"
        folder, functions = _BACKWARD
        if any(folder in name and func in functions for name, func in files):
            return "DistributedDataParallel's gradient all-reduce in `backward()`"
        return None

    def _loader_wait(self, line: str, frame: Any, user: Location | None) -> Wait:
        iterator = _loader_iterator(frame)
        worker_text, at = "", None
        if iterator is not None:
            task = getattr(iterator, "_task_info", {}).get(getattr(iterator, "_rcvd_idx", -1))
            workers = getattr(iterator, "_workers", [])
            if isinstance(task, tuple) and task and isinstance(task[0], int) and task[0] < len(workers):
                worker = workers[task[0]]
                pending = self._indices.pending(iterator)
                samples = f" the samples {_shown(pending)}" if isinstance(pending, list) else " its batch"
                worker_text = f" DataLoader worker {task[0]} (pid {worker.pid}) to fetch{samples}"
                found = self._worker_line(worker)
                if found is not None:
                    at, code = found
                    worker_text += f"; the worker is at {place(at)}" + (f" (`{code}`)" if code else "")
        return Wait("loader", f"{line} for{worker_text or ' a batch from the DataLoader'}",
                    "Make the dataset's reads fast and bounded: prepare or download the data before training, give "
                    "reads a timeout, and set the DataLoader's `timeout=` so that a worker that hangs raises instead "
                    "of stopping the job.", at or user)

    def _worker_line(self, worker: Any) -> tuple[Location, str] | None:
        """The user's line a DataLoader worker process is at, from its own faulthandler dump."""
        if self._stacks is None or not worker.is_alive():
            return None
        path = self._stacks / f"{worker.pid}.txt"
        if not path.is_file():
            return None
        before = path.stat().st_size
        os.kill(worker.pid, signal.SIGUSR2)
        deadline = time.monotonic() + WORKER_DUMP_WAIT
        while time.monotonic() < deadline and path.stat().st_size == before:
            time.sleep(0.02)
        time.sleep(0.05)
        text = path.read_text(encoding="utf-8", errors="replace")[before:]
        for raw in text.splitlines():
            match = _FRAME.match(raw)
            if match and is_user_file(match["file"]):
                import linecache

                location = (match["file"], int(match["line"]))
                return location, linecache.getline(location[0], location[1]).strip()
        return None


class _WorkerStacks:
    """In each DataLoader worker, at its first fetch: write all its threads' stacks to
    `<folder>/<pid>.txt` on SIGUSR2 (only where the signal is not handled already)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._file: Any = None

    def before(self, info: Any) -> Any:
        if self._file is not None or signal.getsignal(signal.SIGUSR2) not in (signal.SIG_DFL, None):
            return None
        self.folder.mkdir(parents=True, exist_ok=True)
        self._file = open(self.folder / f"{os.getpid()}.txt", "w", encoding="utf-8")  # noqa: SIM115 - kept open for the dumps
        faulthandler.register(signal.SIGUSR2, file=self._file, all_threads=True, chain=False)
        return None

    def after(self, info: Any, token: Any) -> None:
        return None


def _loader_iterator(frame: Any) -> Any:
    while frame is not None:
        if frame.f_code.co_filename.endswith(_LOADER) and frame.f_code.co_name in ("_next_data", "__next__"):
            found = read_locals(frame).get("self")
            if found is not None and hasattr(found, "_task_info"):
                return found
        frame = frame.f_back
    return None


def _shown(values: list[Any]) -> str:
    text = ", ".join(str(v) for v in values[:16])
    return f"[{text}{', ...' if len(values) > 16 else ''}]"


def _seconds(value: float) -> str:
    return f"{value * 1e3:.3g} ms" if value < 1 else f"{value:.3g} s"
