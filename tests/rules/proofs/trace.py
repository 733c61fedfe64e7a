"""Proof harness for `trace` rules: the example is a script that `torchdoctor trace` must report
the code for, or, for the GPU-only rules, a JSON trace record (as `torchdoctor trace --format
json` shows it under `trace`) that the diagnoses run on exactly as on a recorded one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from torchdoctor.core.rule import Rule
from torchdoctor.trace.diagnose import diagnose


def triggered(source: str, folder: Path, rule: Rule) -> set[str]:
    if source.lstrip().startswith("{"):
        return {finding.rule for finding in diagnose(json.loads(source))}
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "example.py"
    script.write_text(source, encoding="utf-8")
    report = folder / "report.json"
    result = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "trace", "--skip", "2", "--steps", "5", "--format", "json",
         "--output", str(report), str(script)],
        cwd=folder, capture_output=True, text=True, timeout=180,
        env={**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")},
    )
    if not report.is_file():
        raise AssertionError(f"torchdoctor trace wrote no report (exit {result.returncode}):\n{result.stderr[-3000:]}")
    return {finding["rule"] for finding in json.loads(report.read_text(encoding="utf-8"))["findings"]}
