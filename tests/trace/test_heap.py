"""What the trace leaves behind: the steps after it take no page faults for its freed memory
(trace/heap.py). Page faults are counted, not timed: the verdict does not depend on the load."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import pytest

from tests.trace.conftest import SCRIPTS, torchdoctor_trace
from torchdoctor.trace.heap import keep_heap


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_the_steps_after_the_trace_fault_no_pages_back_in(tmp_path: Path) -> None:
    """Before the fix: about 2,000-3,000 page faults in every step after the trace (glibc gave
    the top of the heap back at each step's last free and faulted it in again at the next)."""
    out = tmp_path / "faults.json"
    ran = torchdoctor_trace("--fail-on", "never", "--skip", "20", "--steps", "10", str(SCRIPTS / "faults.py"), str(out), "60",
                            cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    faults = json.loads(out.read_text(encoding="utf-8"))
    after = faults[32:]  # the trace stops at the end of step 30
    assert statistics.median(after) <= 50, faults


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_the_threshold_is_the_heaps_size() -> None:
    assert (keep_heap() or 0) > 0
