"""Child processes of the tests, remembered so that a failing test shows what they wrote.

A test that runs torchdoctor (or a training job with its ranks and workers) in a subprocess
usually asserts on a report or an exit status; when that fails, the cause is in the children's
stderr (torchrun's error, a rank's traceback). `run()` is `subprocess.run` that keeps each
child's command, exit status and output; `tests/conftest.py` appends them to the failure
report of the test that started them, so no assertion has to repeat them.
"""

from __future__ import annotations

import subprocess
from typing import Any

#: (command, returncode, stdout, stderr) of the children started by the current test
STARTED: list[tuple[str, int | None, str, str]] = []
#: the end of each stream that is kept (a torchrun traceback ends with the cause)
TAIL = 6000


def remember(command: Any, returncode: int | None, stdout: Any, stderr: Any) -> None:
    """Keep one child's outcome for the failure report (for children not started by `run`)."""
    text = " ".join(map(str, command)) if isinstance(command, (list, tuple)) else str(command)
    STARTED.append((text, returncode, _text(stdout), _text(stderr)))


def run(command: Any, **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run(command, **kwargs)`, remembered (the output only when it was captured)."""
    try:
        done = subprocess.run(command, **kwargs)
    except subprocess.TimeoutExpired as exc:
        remember(command, None, exc.stdout, exc.stderr)
        raise
    remember(command, done.returncode, done.stdout, done.stderr)
    return done


def sections() -> list[tuple[str, str]]:
    """The children of the test, as report sections (title, text)."""
    out = []
    for number, (command, returncode, stdout, stderr) in enumerate(STARTED, 1):
        status = "timed out" if returncode is None else f"exit status {returncode}"
        body = f"$ {command}\n({status})\n"
        if stdout:
            body += f"--- stdout (last {TAIL} characters) ---\n{stdout[-TAIL:]}\n"
        if stderr:
            body += f"--- stderr (last {TAIL} characters) ---\n{stderr[-TAIL:]}\n"
        out.append((f"child process {number} of {len(STARTED)}", body))
    return out


def _text(stream: Any) -> str:
    if stream is None:
        return ""
    return stream.decode("utf-8", "replace") if isinstance(stream, bytes) else str(stream)
