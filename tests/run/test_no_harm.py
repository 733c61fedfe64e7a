"""First, do no harm: a run observed by `torchdoctor run` ends with bit-identical weights.

Each script trains deterministically and saves its state (weights, optimizer state, the RNG
state at the end). The same script runs once under plain `python` and once under
`torchdoctor run`; every tensor must be equal bit for bit. The scripts cover DataLoader
workers drawing random numbers, dropout, batch norm, and runs where detectors fire and trace
a step or replay a forward pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tests.run.conftest import SCRIPTS, python, torchdoctor_run

HARMLESS = sorted((SCRIPTS / "harmless").glob("*.py"))


def tensors(state: Any, prefix: str = "") -> dict[str, torch.Tensor]:
    if isinstance(state, torch.Tensor):
        return {prefix: state}
    if isinstance(state, dict):
        return {k: v for key, value in state.items() for k, v in tensors(value, f"{prefix}/{key}").items()}
    if isinstance(state, (list, tuple)):
        return {k: v for i, value in enumerate(state) for k, v in tensors(value, f"{prefix}/{i}").items()}
    return {}


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point():
        width = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return torch.equal(a.contiguous().view(width), b.contiguous().view(width))  # NaN == NaN by bits
    return torch.equal(a, b)


@pytest.mark.slow
@pytest.mark.parametrize("script", HARMLESS, ids=lambda p: p.stem)
def test_final_state_is_bit_identical(script: Path, tmp_path: Path) -> None:
    plain = python(str(script), str(tmp_path / "plain.pt"), cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    observed = torchdoctor_run(str(script), str(tmp_path / "observed.pt"), cwd=tmp_path, options=("--fail-on", "never"))
    assert observed.returncode == 0, observed.stderr
    expected = tensors(torch.load(tmp_path / "plain.pt"))
    got = tensors(torch.load(tmp_path / "observed.pt"))
    assert expected.keys() == got.keys()
    different = [name for name in expected if not same_bits(expected[name], got[name])]
    assert not different, f"observing changed {different}"


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_the_bug_scripts_are_observed(tmp_path: Path) -> None:
    """The scripts with bugs do get findings (so the comparison above covers traced steps)."""
    ran = torchdoctor_run(str(SCRIPTS / "harmless" / "buggy_softmax_no_zero_grad.py"), str(tmp_path / "o.pt"), cwd=tmp_path)
    assert {"TD101", "TD110", "TD120"} <= ran.codes
    script = SCRIPTS / "harmless" / "nan_once_then_skipped.py"
    ran = torchdoctor_run(str(script), str(tmp_path / "o.pt"), cwd=tmp_path)
    assert ran.finding("TD145")["line"] == line_of(script, "torch.log(x)")
