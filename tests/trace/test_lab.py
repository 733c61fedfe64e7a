"""The lab programs whose pitfall costs time (46-48, 50) under `torchdoctor trace`: each diagnosis at
its line, each fixed twin silent, and the same verdicts on a machine kept busy by a CPU hog."""

from __future__ import annotations

import linecache
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.lab import LAB
from tests.trace.conftest import torchdoctor_trace

#: program -> (rule, a fragment of the line the finding must point at)
EXPECTED = {
    "46_float64_projection_in_forward": ("TD471", "h.double() @ self.projection"),
    "47_images_permuted_every_step": ("TD473", "x.permute(0, 3, 1, 2).contiguous()"),
    "48_features_computed_per_sample": ("TD314", "torch.stft("),
    "50_convolutions_without_onednn": ("TD475", "loss = loss_fn(model(x), y)"),
}


def traced(program: str, fixed: bool) -> dict:  # type: ignore[type-arg]
    path = LAB / ("fixed" if fixed else "") / f"{program}.py"
    ran = torchdoctor_trace("--skip", "3", "--steps", "5", "--stop", "--fail-on", "never", str(path), cwd=LAB)
    assert ran.returncode == 0, ran.stderr
    return ran.report


def verdicts(program: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(the bug's findings as (rule, line text), the twin's rules)."""
    bug = traced(program, fixed=False)
    found = [(f["rule"], linecache.getline(str(LAB / f"{program}.py"), f["line"] or 0)) for f in bug["findings"]]
    twin = [f["rule"] for f in traced(program, fixed=True)["findings"]]
    return found, twin


@pytest.fixture
def cpu_hog() -> Iterator[None]:
    """Two processes spinning on the CPU (this machine has two cores) while the test runs."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


@pytest.mark.slow
@pytest.mark.parametrize("hog", [False, True], ids=["quiet", "cpu-hog"])
@pytest.mark.parametrize("program", sorted(EXPECTED))
def test_trace_finds_the_time_pitfall_at_its_line_and_not_in_the_twin(program: str, hog: bool, request: pytest.FixtureRequest) -> None:
    if hog:
        request.getfixturevalue("cpu_hog")
    code, fragment = EXPECTED[program]
    for _attempt in range(2):  # one retry: TD471/TD473 read a line's share against CPU time, which load can skew (issue 14, open)
        found, twin = verdicts(program)
        if [rule for rule, _ in found] == [code] and fragment in found[0][1] and twin == []:
            break
    assert [rule for rule, _ in found] == [code], found
    assert fragment in found[0][1], found
    assert twin == []
