"""First, do no harm: a run observed by `torchdoctor run` is the run plain `python` makes.

Each script under scripts/harmless/ trains deterministically and saves what it has (weights,
optimizer state, the RNG state at the end; some also a whole pickled model, a TorchScript
file) to `argv[1]` and files beside it. It runs once under plain `python` and once under
`torchdoctor run`: the exit status, stdout, the warnings on stderr and every tensor of every
saved file must be the same, bit for bit. The scripts cover DataLoader workers drawing random
numbers, dropout, batch norm, runs where detectors fire and trace a step or replay a forward
pass, and the shapes of real programs: whole-model torch.save, deepcopy EMA and best-model
snapshots, pickle, torch.jit.trace/script after training, torch.compile (module, function,
`module.compile()`, mid-run), an LBFGS closure, weights updated by hand without an optimizer,
a Lightning-style loop that inspects its modules' hooks.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from tests.run.conftest import SCRIPTS, environment, python, torchdoctor_run

HARMLESS = sorted((SCRIPTS / "harmless").glob("*.py"))
#: scripts with bugs -> the codes their observed run must report (so the comparison covers traced
#: steps), and (code, a fragment of the line it must point at) where the line is checked
FOUND: dict[str, tuple[set[str], tuple[str, str] | None]] = {
    "buggy_softmax_no_zero_grad": ({"TD101", "TD110", "TD120"}, None),
    "nan_once_then_skipped": ({"TD145"}, ("TD145", "torch.log(x)")),
}


def tensors(state: Any, prefix: str = "") -> dict[str, torch.Tensor]:
    if isinstance(state, torch.Tensor):
        return {prefix: state}
    if isinstance(state, nn.Module):
        return tensors(state.state_dict(), prefix)
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


def saved(path: Path) -> dict[str, torch.Tensor]:
    """Every tensor of a file the script saved (a TorchScript file through torch.jit.load)."""
    if path.suffix == ".jit":
        return tensors(dict(torch.jit.load(str(path)).state_dict()))
    return tensors(torch.load(path, weights_only=False))


def warnings_of(stderr: str) -> list[str]:
    """The warning lines a run printed (torchdoctor's own report lines removed)."""
    return [line for line in stderr.splitlines() if re.search(r"Warning\b", line)]


@pytest.mark.slow
@pytest.mark.parametrize("script", HARMLESS, ids=lambda p: p.stem)
def test_the_observed_run_is_the_plain_run(script: Path, tmp_path: Path) -> None:
    plain = python(str(script), str(tmp_path / "plain.pt"), cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    observed = torchdoctor_run(str(script), str(tmp_path / "observed.pt"), cwd=tmp_path, options=("--fail-on", "never"))
    assert observed.returncode == plain.returncode, observed.stderr
    assert observed.stdout.replace("observed.pt", "plain.pt") == plain.stdout
    assert warnings_of(observed.stderr) == warnings_of(plain.stderr)
    files = sorted(path.name.replace("plain.pt", "") for path in tmp_path.glob("plain.pt*"))
    assert sorted(path.name.replace("observed.pt", "") for path in tmp_path.glob("observed.pt*")) == files
    for suffix in files:
        expected, got = saved(tmp_path / f"plain.pt{suffix}"), saved(tmp_path / f"observed.pt{suffix}")
        assert expected.keys() == got.keys(), suffix
        different = [name for name in expected if not same_bits(expected[name], got[name])]
        assert not different, f"observing changed {different} in plain.pt{suffix}"
    assert "TD006" not in observed.codes, observed.report
    codes, line = FOUND.get(script.stem, (set(), None))
    assert codes <= observed.codes, observed.report
    if line is not None:
        assert observed.finding(line[0])["line"] == line_of(script, line[1])
    if ".model" in files:
        loads_without_torchdoctor(tmp_path / "observed.pt.model")


BLOCK_TORCHDOCTOR = """
import sys
class NoTorchdoctor:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "torchdoctor":
            raise ImportError("torchdoctor is not installed here")
sys.meta_path.insert(0, NoTorchdoctor())
import torch
model = torch.load(sys.argv[1], weights_only=False)
print(type(model).__name__, sum(p.numel() for p in model.parameters()))
"""


def loads_without_torchdoctor(path: Path) -> None:
    """A whole model saved under observation loads where torchdoctor is not installed (checked on
    the observed run above, not on a run of its own: that run is the one a user saves)."""
    loaded = subprocess.run([sys.executable, "-c", BLOCK_TORCHDOCTOR, str(path)],
                            capture_output=True, text=True, timeout=120, env=environment())
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.startswith("Sequential "), loaded.stdout


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)
