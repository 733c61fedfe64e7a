"""Same code, same verdict: the check's findings do not depend on how busy the machine is.

The overfit check is budgeted in steps (and operation counts), the DataLoader's throughput is
compared with a training step and a reference work, all timed in the same process; here the
same programs are checked on the machine as it is and with every core kept busy.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from tests.lab import LAB
from tests.load import cpu_hog
from torchdoctor.core.report import Report
from torchdoctor.health.api import check_target
from torchdoctor.rules.performance.input_bound_loader import RULE as INPUT_BOUND

pytestmark = pytest.mark.slow

#: programs whose verdicts rest on timings or budgets: overfitting (TD304 or a pass), and
#: DataLoaders with worker processes (TD314 must stay quiet on the fixed twins)
PROGRAMS = [LAB / "01_softmax_before_cross_entropy.py", LAB / "fixed" / "14_rng_object_in_dataset_workers.py",
            LAB / "fixed" / "17_lambda_collate_fn_workers.py"]


def _examples(tmp_path: Path) -> list[Path]:
    """TD314's own examples: a loader that sleeps per sample (input-bound), and its cached twin."""
    doc = INPUT_BOUND.doc
    blocks = [part.split("```", 1)[0] for part in doc.split("```python\n")[1:]]
    paths = []
    for name, source in zip(("slow_loader.py", "cached_loader.py"), blocks):
        path = tmp_path / name
        path.write_text(source, encoding="utf-8")
        paths.append(path)
    return paths


def verdicts(report: Report) -> set[tuple[str, str | None, int | None]]:
    return {(f.rule, f.file, f.line) for f in report.findings}


def test_findings_are_the_same_on_a_busy_machine(tmp_path: Path) -> None:
    """With torch's threads (as on the command line, where threads waiting for each other on
    busy cores make each step many times slower) and two busy loops per core."""
    programs = PROGRAMS + _examples(tmp_path)
    torch.set_num_threads(max(2, os.cpu_count() or 2))  # restored by the one_thread fixture
    quiet = {p.name: check_target(f"{p}:make", progress=False) for p in programs}
    with cpu_hog(2 * (os.cpu_count() or 2)):
        busy = {p.name: check_target(f"{p}:make", progress=False) for p in programs}
    for name in quiet:
        assert verdicts(busy[name]) == verdicts(quiet[name]), (name, verdicts(quiet[name]), verdicts(busy[name]))
        assert not busy[name].notices, busy[name].notices  # no safety net fired
    overfit = [f for f in busy["01_softmax_before_cross_entropy.py"].findings if f.rule == "TD304"]
    assert overfit and overfit[0].message.endswith("(300 steps)")  # the whole budget, however slow each step was
    assert {f.rule for f in busy["slow_loader.py"].findings} >= {"TD314"}
    assert "TD314" not in {f.rule for r in busy.values() for f in r.findings if r is not busy["slow_loader.py"]}
