"""Proof harness for rules whose `proof` is "check".

The example is a module defining `make()`; it is written to a file in `folder` and checked the
way `torchdoctor check path/to/file.py:make` checks it. The machine is simulated as a small
container: 4 CPUs and Docker's default 64 MB /dev/shm (the docs of TD312 and TD313 say so);
everything else is real.
"""

from __future__ import annotations

from pathlib import Path

import torch

from torchdoctor.core.rule import Rule
from torchdoctor.health.api import check_target

SIMULATED = {"cpu_count": 4, "shm_free_bytes": 64 * 1024 * 1024, "progress": False}


def triggered(source: str, folder: Path, rule: Rule) -> set[str]:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{rule.code.lower()}_{folder.name}.py"
    path.write_text(source, encoding="utf-8")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is much faster on a busy machine
    try:
        report = check_target(f"{path}:make", **SIMULATED)
    finally:
        torch.set_num_threads(threads)
    return {finding.rule for finding in report.findings}
