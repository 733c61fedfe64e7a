"""The progress line: on a terminal only, never in a pipe or in CI, and only once work takes a while."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

import pytest

from torchdoctor.core.progress import Progress, on_a_terminal

SHOW = (
    "import time; from torchdoctor.core.progress import Progress\n"
    "with Progress('torchdoctor lint', 3, delay={delay}) as p:\n"
    "    for i in range(1, 4):\n"
    "        p.update(i, f'file{{i}}.py'); time.sleep(0.3)\n"
)


def on_a_pty(code: str, **env: str) -> str:
    """What a child writes to its terminal (stdin, stdout and stderr on one pseudo-terminal), without
    the escape sequences."""
    leader, follower = pty.openpty()
    environment = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "TERM")}
    environment.update({"TERM": "xterm-256color", **env})
    child = subprocess.Popen([sys.executable, "-c", code], stdin=follower, stdout=follower, stderr=follower, env=environment)
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    child.wait(timeout=60)
    os.close(leader)
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode(errors="replace"))  # colours and cursor moves


def test_a_terminal_sees_the_progress_and_ci_does_not() -> None:
    shown = on_a_pty(SHOW.format(delay=0))
    assert "torchdoctor lint 2/3: file2.py" in shown
    assert on_a_pty(SHOW.format(delay=0), CI="true") == ""
    assert on_a_pty(SHOW.format(delay=0), TERM="dumb") == ""


def test_quick_work_shows_nothing() -> None:
    assert on_a_pty(SHOW.format(delay=30)) == ""


def test_a_pipe_sees_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert not on_a_terminal()  # pytest captures stderr
    with Progress("torchdoctor check", 3) as progress:
        progress.update(1, "something")
    assert capsys.readouterr().err == ""


def test_lint_over_many_files_shows_its_progress(tmp_path) -> None:  # type: ignore[no-untyped-def]
    for i in range(5):
        (tmp_path / f"m{i}.py").write_text("x = 1\n", encoding="utf-8")
    code = ("from torchdoctor.linter import runner; runner.PROGRESS_AFTER = 0\n"
            "import time; real = runner._lint_target\n"
            "runner._lint_target = lambda *a: (time.sleep(0.2), real(*a))\n"
            f"from torchdoctor import cli; cli.main(['lint', {str(tmp_path)!r}])\n")
    shown = on_a_pty(code)
    assert "torchdoctor lint 3/5" in shown and "torchdoctor lint: 0 errors" in shown


@pytest.mark.slow
def test_run_says_on_a_terminal_that_it_observes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / "train.py"
    script.write_text("print('training')\n", encoding="utf-8")
    shown = on_a_pty(f"from torchdoctor import cli; cli.main(['run', {str(script)!r}])")
    assert f"torchdoctor: observing {script}; the report follows when it ends" in shown
    assert shown.index("torchdoctor: observing") < shown.index("training")
    assert "torchdoctor: observing" not in on_a_pty(f"from torchdoctor import cli; cli.main(['run', {str(script)!r}])", CI="1")


def test_trace_says_on_a_terminal_what_it_traces(tmp_path) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / "train.py"
    script.write_text("print('training')\n", encoding="utf-8")
    shown = on_a_pty(f"from torchdoctor import cli; cli.main(['trace', {str(script)!r}])")
    assert f"torchdoctor: tracing {script} (optimizer steps 4-8); the report follows when it ends" in shown
    assert "torchdoctor: tracing" not in on_a_pty(f"from torchdoctor import cli; cli.main(['trace', {str(script)!r}])", CI="1")
