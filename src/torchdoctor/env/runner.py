"""The seam between probes and the machine: commands, files and variables come through a `Host`.

Probes never call `subprocess` or `open` themselves, so tests can give them a fake machine (an
NVIDIA driver, an old compiler) while the real one is used everywhere else. Every access may
fail; a probe that cannot collect a fact records None ("not collected") and never raises.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Completed:
    """What a command printed. `timed_out` keeps the output it had produced until it was killed."""

    returncode: int
    stdout: str
    stderr: str = ""
    timed_out: bool = False


Runner = Callable[[Sequence[str], float], "Completed | None"]


def run_command(argv: Sequence[str], timeout: float) -> Completed | None:
    """Run `argv` without a shell; None when the program does not exist or cannot start."""
    env = {**os.environ, "LC_ALL": "C"}
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, env=env,
            stdin=subprocess.DEVNULL, errors="replace",
        )
    except subprocess.TimeoutExpired as exc:
        return Completed(-1, _text(exc.stdout), _text(exc.stderr), timed_out=True)
    except OSError:
        return None
    return Completed(done.returncode, done.stdout, done.stderr)


def _text(value: str | bytes | None) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value or ""


def read_text(path: str) -> str | None:
    """A small text file's content, or None when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(1 << 20)
    except OSError:
        return None


@dataclass(frozen=True)
class Host:
    """The machine as probes see it; every field can be replaced by a fake in tests."""

    run: Runner = run_command
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    read: Callable[[str], str | None] = read_text
    which: Callable[[str], str | None] = lambda name: shutil.which(name)
    exists: Callable[[str], bool] = os.path.exists

    def output(self, argv: Sequence[str], timeout: float = 10.0) -> str | None:
        """stdout (or stderr when stdout is empty) of a command that succeeded, else None."""
        done = self.run(argv, timeout)
        if done is None or done.timed_out or done.returncode != 0:
            return None
        return done.stdout or done.stderr
