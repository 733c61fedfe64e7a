"""`torchdoctor run` (or `trace`) in the test's process, with the script started from a warm Python.

Starting Python and importing torch is most of what a small example costs under `torchdoctor
run` (about 2 of 2.5 CPU-seconds). `command(argv, folder)` runs the CLI in this process,
exactly as `python -m torchdoctor ARGV` would (options, config, the run folder, the hang watch,
the records, the job's findings, the report), except for one step: the script's process is not
a fresh `python SCRIPT` but a fork of a server that imported torch once (tests/warm_server.py),
made into that process (see there). Everything it starts (DataLoader workers, spawned children,
subprocesses) is a real process of its own, observed as under `run`. Only scripts: a module
target (`-m torch.distributed.run ...`) needs `torchdoctor run` in a process of its own.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil

from tests import children
from torchdoctor import cli
from torchdoctor.run import launcher

SERVER = Path(__file__).with_name("warm_server.py")
#: seconds a script may run before the test fails (the subprocess harnesses' timeout)
TIMEOUT = 180.0
_server: subprocess.Popen[bytes] | None = None


def command(argv: list[str], folder: Path, env: dict[str, str]) -> int:
    """`python -m torchdoctor ARGV` run in `folder` with `env` added to the environment; the exit status."""
    saved_cwd, saved_env = os.getcwd(), dict(os.environ)
    os.environ.update(env)
    os.chdir(folder)
    real = launcher.run
    launcher.run = _run  # the one step that differs, see the module's doc
    try:
        return cli.main(argv)
    finally:
        launcher.run = real
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def _run(target: launcher.Target, folder: Path, monitor: Callable[[], launcher.Stop | None] | None = None) -> launcher.Finished:
    """`launcher.run`, with a script's process forked from the warm server."""
    assert target.script is not None, "a module target (-m) is started as a process of its own: use a subprocess"
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="warm-") as streams:
        out, err = Path(streams) / "stdout", Path(streams) / "stderr"
        argv = [str(Path(target.script).resolve()), *target.args]
        request = {"argv": argv, "cwd": os.getcwd(), "env": launcher.child_environment(folder), "stdout": str(out), "stderr": str(err)}
        returncode, stopped = _started(request, monitor)
        children.remember(["(warm fork of tests/warm_server.py)", *argv], returncode, _read(out), _read(err))
    return launcher.Finished(returncode=returncode, seconds=time.monotonic() - started, stopped=stopped)


def _started(request: dict[str, Any], monitor: Callable[[], launcher.Stop | None] | None) -> tuple[int, str | None]:
    """Send the request, then wait for the script's end, asking `monitor` every POLL seconds as
    `launcher.run` does (stopping the script's tree when it says why); (returncode, stopped)."""
    global _server
    server = _warm()
    assert server.stdin is not None
    try:
        server.stdin.write((json.dumps(request) + "\n").encode())
        server.stdin.flush()
        replies = _replies(server)
        pid = next((reply for reply in replies if reply), {}).get("pid")  # the server may still be importing torch
        if pid is None:
            raise AssertionError("the warm server ended without starting the script (its error is above)")
        deadline, stopped, late = time.monotonic() + TIMEOUT, None, False
        for reply in replies:
            if reply and late:
                raise AssertionError(f"{request['argv'][0]} ran longer than {TIMEOUT:.0f} s")
            if reply:
                return reply["returncode"], stopped
            if time.monotonic() > deadline and not late:
                late = True
                _stop(pid)
            elif monitor is not None and stopped is None:
                stop = monitor()
                if stop is not None:
                    stopped = stop.reason
                    _stop(pid)
    except BaseException:
        server.kill()  # its answers to this request may still come: the next test gets a new one
        server.wait()
        _server = None
        raise
    raise AssertionError("the warm server ended before the script did")


def _replies(server: subprocess.Popen[bytes]) -> Iterator[dict[str, Any]]:
    """The server's replies; an empty dict each POLL seconds without one."""
    assert server.stdout is not None
    fd, pending = server.stdout.fileno(), b""
    while True:
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            yield json.loads(line)
        ready, _, _ = select.select([fd], [], [], launcher.POLL)
        if not ready:
            yield {}
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return
        pending += chunk


def _warm() -> subprocess.Popen[bytes]:
    """The server of this test process, started on first use (and again if it died)."""
    global _server
    if _server is None or _server.poll() is not None:
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}  # read at torch's import
        _server = subprocess.Popen([sys.executable, str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    return _server


def close() -> None:
    """End this test process's server (at the end of the session: its time is the session's)."""
    global _server
    if _server is not None:
        assert _server.stdin is not None
        _server.stdin.close()  # the server ends at the end of its input
        _server.wait()
        _server = None


def _stop(pid: int) -> None:
    """SIGTERM the script and its descendants, SIGKILL what is left after launcher.GRACE seconds."""
    try:
        processes = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for process in processes:
            try:
                process.send_signal(signum)
            except psutil.Error:
                pass
        _, alive = psutil.wait_procs(processes, timeout=launcher.GRACE)
        if not alive:
            return


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
