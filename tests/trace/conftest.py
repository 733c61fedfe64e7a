"""Run scripts under `torchdoctor trace` in a subprocess, with the JSON report read back."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.run.conftest import Ran, environment

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def torchdoctor_trace(*args: str, cwd: Path, timeout: float = 240, env: dict[str, str] | None = None) -> Ran:
    """`torchdoctor trace --output FILE args...` in `cwd`."""
    with tempfile.TemporaryDirectory(prefix="td-trace-") as folder:
        output = Path(folder) / "report.json"
        result = subprocess.run(
            [sys.executable, "-m", "torchdoctor", "trace", "--output", str(output), *args],
            cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env or environment(),
        )
        report = json.loads(output.read_text(encoding="utf-8")) if output.is_file() else {}
    return Ran(result.returncode, result.stdout, result.stderr, report)


def line_of(report: dict, fragment: str) -> dict:  # type: ignore[type-arg]
    """The table row of the line whose source contains `fragment`."""
    return next(line for line in report["trace"]["lines"] if fragment in line["source"])
