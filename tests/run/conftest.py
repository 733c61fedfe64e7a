"""Helpers for the run tests: run a script under `torchdoctor run` (or plain python) in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import children

HERE = Path(__file__).resolve().parent
SCRIPTS = HERE / "scripts"


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str
    report: dict[str, Any]

    @property
    def codes(self) -> set[str]:
        return {f["rule"] for f in self.report.get("findings", [])}

    def finding(self, code: str) -> dict[str, Any]:
        return next(f for f in self.report["findings"] if f["rule"] == code)


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")  # tiny models on a small, shared machine
    env.setdefault("TORCHDOCTOR_STOP_DEADLOCK_AFTER", "3")  # stop a deadlocked job sooner than the default 8 s
    return env


def torchdoctor_run(*args: str, cwd: Path, options: tuple[str, ...] = (), timeout: float = 180) -> Ran:
    """`torchdoctor run [options] args...` in `cwd`, with the JSON report read from --output."""
    with tempfile.TemporaryDirectory(prefix="td-report-") as folder:  # not in cwd: tests share script folders
        output = Path(folder) / "report.json"
        result = children.run(
            [sys.executable, "-m", "torchdoctor", "run", "--output", str(output), *options, *args],
            cwd=cwd, capture_output=True, text=True, timeout=timeout, env=environment(),
        )
        report = json.loads(output.read_text(encoding="utf-8")) if output.is_file() else {}
    return Ran(result.returncode, result.stdout, result.stderr, report)


def python(*args: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return children.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=environment())


@pytest.fixture
def write(tmp_path: Path):  # type: ignore[no-untyped-def]
    """write(name, source) -> path of a script in the test's folder."""

    def _write(name: str, source: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
        return path

    return _write
