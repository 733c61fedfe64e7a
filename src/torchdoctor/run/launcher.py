"""Start the script as `python SCRIPT ARGS...` (or `python -m MODULE ARGS...`) would, observed.

The script runs in a child process of the real interpreter, not in an emulation: its
`__main__`, `__spec__`, `sys.argv`, `sys.path[0]`, stdin/stdout/stderr and exit status are
Python's own. Observation comes from the environment: the bootstrap folder first on
PYTHONPATH (its `sitecustomize` starts `torchdoctor.run.boot`) and the run folder where every
process writes its records. Children of the script inherit both, so DataLoader workers,
`torch.multiprocessing.spawn` children and torchrun's ranks are observed too. A separate
runner process also means the report is written even when the script dies from a signal.

No torch here.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Protocol

from torchdoctor.core.errors import UsageError
from torchdoctor.linter.source import Unreadable, read_source
from torchdoctor.run.records import ENV_DIR, ENV_PARENT

BOOTSTRAP = Path(__file__).resolve().parent / "_bootstrap"
#: seconds between two questions to the monitor while the script runs
POLL = 0.5
#: seconds a stopped job gets to end after SIGTERM before SIGKILL
GRACE = 3.0
#: signals the runner passes on to the script (Ctrl-C reaches the script from the terminal itself)
FORWARDED = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name))


@dataclass(frozen=True)
class Target:
    """What to run: a script (file, folder or zip with `__main__.py`) or a module, and its arguments."""

    script: str | None
    module: str | None
    args: tuple[str, ...] = ()

    def command(self) -> list[str]:
        if self.module is not None:
            return [sys.executable, "-m", self.module, *self.args]
        assert self.script is not None
        return [sys.executable, self.script, *self.args]

    def display(self) -> str:
        head = f"-m {self.module}" if self.module is not None else str(self.script)
        return " ".join([head, *self.args])

    def check(self) -> None:
        """Refuse, with one line, what `python` could not even start (exit 2, nothing run)."""
        if self.module is not None:
            _check_module(self.module)
        else:
            assert self.script is not None
            _check_script(Path(self.script))


def _check_script(path: Path) -> None:
    if path.is_dir():
        if not (path / "__main__.py").is_file():
            raise UsageError(f"cannot run {str(path)!r}: it is a folder without a __main__.py")
        return
    if not path.is_file():
        raise UsageError(f"no file to run: {str(path)!r}")
    if path.suffix in (".zip", ".pyz"):
        return  # a zip application: Python checks it
    try:
        compile(read_source(path), str(path), "exec", dont_inherit=True)
    except Unreadable as problem:  # what Python would refuse before running a line
        raise UsageError(f"cannot run {path}: {problem.reason}") from None
    except SyntaxError as exc:
        where = f" at line {exc.lineno}" if exc.lineno else ""
        raise UsageError(f"cannot run {path}: {exc.msg}{where}; fix the syntax error first") from None
    except ValueError as exc:
        raise UsageError(f"cannot run {path}: {exc}") from None


def _check_module(module: str) -> None:
    if not module or not all(part.isidentifier() for part in module.split(".")):
        raise UsageError(f"-m {module!r}: not a module name")
    top = module.split(".")[0]
    saved = list(sys.path)
    sys.path.insert(0, os.getcwd())  # what `python -m` puts first
    try:
        found = importlib.util.find_spec(top) is not None  # a top-level name: nothing is imported
    except (ImportError, ValueError):
        found = False
    finally:
        sys.path[:] = saved
    if not found:
        raise UsageError(f"no module named {top!r} (for -m {module})")


def child_environment(folder: Path) -> dict[str, str]:
    """The script's environment: ours, plus the bootstrap folder on PYTHONPATH and the run folder."""
    env = dict(os.environ)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join([str(BOOTSTRAP), existing]) if existing else str(BOOTSTRAP)
    env[ENV_DIR] = str(folder)
    env[ENV_PARENT] = str(os.getpid())
    return env


@dataclass(frozen=True)
class Finished:
    """How the script's process ended: its return code (negative: killed by that signal), and
    why torchdoctor stopped it, if it did (a deadlocked distributed job)."""

    returncode: int
    seconds: float
    stopped: str | None = None

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode < 0 else None

    @property
    def exit_status(self) -> int:
        """What a shell reports for `python SCRIPT`: the exit code, or 128 + the signal number."""
        return 128 + -self.returncode if self.returncode < 0 else self.returncode


class Stop(Protocol):
    """Why a running job must be stopped (see ranks.Deadlock)."""

    @property
    def reason(self) -> str: ...


def run(target: Target, folder: Path, monitor: Callable[[], Stop | None] | None = None) -> Finished:
    """Run the target to its end, passing on termination signals; Ctrl-C reaches it directly.

    `monitor` is asked every POLL seconds whether the job can still finish; when it says why
    not, the script and every process it started are stopped (SIGTERM, then SIGKILL).
    """
    started = time.monotonic()
    try:
        process = subprocess.Popen(target.command(), env=child_environment(folder))
    except OSError as exc:
        raise UsageError(f"cannot start {sys.executable}: {exc.strerror}") from None
    stopped = None
    with _forwarding(process):
        while True:
            try:
                returncode = process.wait(timeout=POLL if monitor is not None and stopped is None else None)
                break
            except subprocess.TimeoutExpired:
                assert monitor is not None
                stop = monitor()
                if stop is not None:
                    stopped = stop.reason
                    _stop_tree(process)
    return Finished(returncode=returncode, seconds=time.monotonic() - started, stopped=stopped)


def _stop_tree(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the script and all its descendants (torchrun's ranks, spawned children), then
    SIGKILL whatever is left after GRACE seconds."""
    pids = [process.pid, *_descendants(process.pid)]
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, signum)
            except OSError:
                pass
        deadline = time.monotonic() + GRACE
        while time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.1)
        if process.poll() is not None and not [pid for pid in pids[1:] if alive(pid)]:
            return


def _descendants(root: int) -> list[int]:
    """Every process below `root`, children first (psutil reads the process table on every OS)."""
    import psutil  # here, not at the top: every observed process imports this module (nodes/final.py)

    try:
        return [child.pid for child in psutil.Process(root).children(recursive=True)]
    except psutil.Error:
        return []


def alive(pid: int) -> bool:
    """Whether a process still runs (a zombie, ended but not yet reaped by its parent, does not)."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True  # it exists, but we may not look at it


@contextmanager
def _forwarding(process: subprocess.Popen[bytes]) -> Iterator[None]:
    """While the script runs: ignore Ctrl-C here (the terminal sends it to the script as well,
    which reports and exits) and pass SIGTERM/SIGHUP/SIGQUIT on to the script."""

    def forward(signum: int, _frame: FrameType | None) -> None:
        if process.poll() is None:
            process.send_signal(signum)

    def ignore(_signum: int, _frame: FrameType | None) -> None:
        pass

    previous = {signal.SIGINT: signal.signal(signal.SIGINT, ignore)}
    for signum in FORWARDED:
        previous[signum] = signal.signal(signum, forward)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
