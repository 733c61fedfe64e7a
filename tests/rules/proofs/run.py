"""Proof harness for `run` rules: the example is a script; `torchdoctor run` must report the code.

`torchdoctor run --format json --output report.json example.py` runs in the test's process with
the script's process forked from a warm Python that imported torch once (tests/warm.py says what
that changes: only how the script's process starts, not the CLI, the observation or the report).
A script whose first line is `# torchrun ARGS` (e.g. `# torchrun --nproc-per-node 2`) runs as
`torchdoctor run -m torch.distributed.run --standalone ARGS example.py` in a process of its own:
distributed examples look like the scripts users launch with torchrun (`--standalone` picks a
free port).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests import children, warm
from torchdoctor.core.rule import Rule

#: no GPU here: the GPU-only checks (host syncs, TD452) treat CPU tensors as device ones
#: and a stall (TD497) is a pause of seconds, not of the default minute
ENV = {"TORCHDOCTOR_DEVICE_CHECKS_ON_CPU": "1", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
       "TORCHDOCTOR_STALL_TIMEOUT": "2"}


def triggered(source: str, folder: Path, rule: Rule) -> set[str]:
    """Write the script to `folder`, run it under `torchdoctor run` there, return the codes reported."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "example.py"
    script.write_text(source, encoding="utf-8")
    report = folder / "report.json"
    first = source.lstrip().splitlines()[0] if source.strip() else ""
    command = ["run", "--format", "json", "--output", str(report)]
    if first.startswith("# torchrun "):
        _torchrun(command, ["-m", "torch.distributed.run", "--standalone", *first.split()[2:], str(script)], folder)
    else:
        status = warm.command([*command, str(script)], folder, ENV)
        if not report.is_file():
            raise AssertionError(f"torchdoctor run wrote no report (exit {status}); the script's output is below")
    return {finding["rule"] for finding in json.loads(report.read_text(encoding="utf-8"))["findings"]}


def _torchrun(command: list[str], target: list[str], folder: Path) -> None:
    result = children.run(
        [sys.executable, "-m", "torchdoctor", *command, *target],
        cwd=folder, capture_output=True, text=True, timeout=180,
        env={**os.environ, **ENV, "TORCHDOCTOR_STOP_DEADLOCK_AFTER": "3"},  # a deadlocked job is stopped sooner than by default
    )
    if not (folder / "report.json").is_file():
        raise AssertionError(f"torchdoctor run wrote no report (exit {result.returncode}):\n{result.stderr[-3000:]}")
