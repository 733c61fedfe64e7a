"""Proof harness for `trace` rules: the example is a script that `torchdoctor trace` must report
the code for, or, for the GPU-only rules, a JSON trace record (as `torchdoctor trace --format
json` shows it under `trace`) that the diagnoses run on exactly as on a recorded one.

The script runs under `torchdoctor trace` in the test's process, its own process forked from a
warm Python that imported torch once (tests/warm.py: only how the script's process starts differs)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests import warm
from torchdoctor.core.rule import Rule
from torchdoctor.trace.diagnose import diagnose


def triggered(source: str, folder: Path, rule: Rule) -> set[str]:
    if source.lstrip().startswith("{"):
        return {finding.rule for finding in diagnose(json.loads(source))}
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "example.py"
    script.write_text(source, encoding="utf-8")
    report = folder / "report.json"
    status = warm.command(
        ["trace", "--skip", "2", "--steps", "5", "--format", "json", "--output", str(report), str(script)],
        folder, {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")},
    )
    if not report.is_file():
        raise AssertionError(f"torchdoctor trace wrote no report (exit {status}); the script's output is below")
    return {finding["rule"] for finding in json.loads(report.read_text(encoding="utf-8"))["findings"]}
