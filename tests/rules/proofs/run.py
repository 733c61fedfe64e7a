"""Proof harness for `run` rules: the example is a script; `torchdoctor run` must report the code.

A script whose first line is `# torchrun ARGS` (e.g. `# torchrun --nproc-per-node 2`) runs as
`torchdoctor run -m torch.distributed.run --standalone ARGS example.py`: distributed examples
look like the scripts users launch with torchrun (`--standalone` picks a free port).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests import children
from torchdoctor.core.rule import Rule


def triggered(source: str, folder: Path, rule: Rule) -> set[str]:
    """Write the script to `folder`, run it under `torchdoctor run` there, return the codes reported."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "example.py"
    script.write_text(source, encoding="utf-8")
    report = folder / "report.json"
    first = source.lstrip().splitlines()[0] if source.strip() else ""
    target = [str(script)]
    if first.startswith("# torchrun "):
        target = ["-m", "torch.distributed.run", "--standalone", *first.split()[2:], str(script)]
    result = children.run(
        [sys.executable, "-m", "torchdoctor", "run", "--format", "json", "--output", str(report), *target],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=180,
        # no GPU here: let the GPU-only checks (host syncs, TD452) treat CPU tensors as device ones
        env={**os.environ, "TORCHDOCTOR_DEVICE_CHECKS_ON_CPU": "1", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
             "TORCHDOCTOR_STOP_DEADLOCK_AFTER": "3"},  # a deadlocked example is stopped sooner than by default
    )
    if not report.is_file():
        raise AssertionError(f"torchdoctor run wrote no report (exit {result.returncode}):\n{result.stderr[-3000:]}")
    return {finding["rule"] for finding in json.loads(report.read_text(encoding="utf-8"))["findings"]}
