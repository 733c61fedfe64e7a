"""Proof harness for `run` rules: the example is a script; `torchdoctor run` must report the code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from torchdoctor.core.rule import Rule


def triggered(source: str, folder: Path, rule: Rule) -> set[str]:
    """Write the script to `folder`, run it under `torchdoctor run` there, return the codes reported."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "example.py"
    script.write_text(source, encoding="utf-8")
    report = folder / "report.json"
    result = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "run", "--format", "json", "--output", str(report), str(script)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=180,
        # no GPU here: let the GPU-only checks (host syncs, TD452) treat CPU tensors as device ones
        env={**os.environ, "TORCHDOCTOR_DEVICE_CHECKS_ON_CPU": "1"},
    )
    if not report.is_file():
        raise AssertionError(f"torchdoctor run wrote no report (exit {result.returncode}):\n{result.stderr[-3000:]}")
    return {finding["rule"] for finding in json.loads(report.read_text(encoding="utf-8"))["findings"]}
