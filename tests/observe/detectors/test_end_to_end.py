"""The silent-bug detectors under `torchdoctor run` (real interpreter, real workers) and
`torchdoctor.watch()`; and first, do no harm: bit-identical final state with them firing."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.lab import LAB
from tests.observe.detectors.conftest import line_of
from tests.run.conftest import python, torchdoctor_run
from tests.run.test_no_harm import same_bits, tensors

SCRIPTS = Path(__file__).resolve().parent / "scripts"
#: what each detector-heavy script must be told (so the no-harm run covers detectors firing)
EXPECTED = {
    "mode_and_memory.py": {"TD112", "TD116", "TD130", "TD131", "TD132", "TD146", "TD147", "TD148", "TD161", "TD427"},
    "data_and_workers.py": {"TD140", "TD141", "TD450", "TD451"},
    "amp_and_syncs.py": {"TD113", "TD163", "TD428", "TD452"},
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_detectors_fire_and_the_final_state_is_bit_identical(name: str, tmp_path: Path) -> None:
    script = SCRIPTS / name
    plain = python(str(script), str(tmp_path / "plain.pt"), cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    observed = torchdoctor_run(str(script), str(tmp_path / "observed.pt"), cwd=tmp_path, options=("--fail-on", "never"))
    assert observed.returncode == 0, observed.stderr
    assert EXPECTED[name] <= observed.codes, observed.codes
    assert not observed.report.get("notices"), observed.report.get("notices")
    expected = tensors(torch.load(tmp_path / "plain.pt"))
    got = tensors(torch.load(tmp_path / "observed.pt"))
    assert expected.keys() == got.keys()
    assert not [key for key in expected if not same_bits(expected[key], got[key])]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("program", "code", "text"),
    [
        ("14_rng_object_in_dataset_workers.py", "TD140", "self.rng = np.random.default_rng(0)"),
        ("16_eval_never_switched_back.py", "TD131", "for x, y in loader:"),
    ],
)
def test_lab_programs_under_torchdoctor_run(program: str, code: str, text: str, tmp_path: Path) -> None:
    buggy = torchdoctor_run(str(LAB / program), cwd=tmp_path)
    finding = buggy.finding(code)
    assert finding["line"] == line_of(LAB / program, text)
    assert finding["file"].endswith(program)
    fixed = torchdoctor_run(str(LAB / "fixed" / program), cwd=tmp_path)
    assert code not in fixed.codes and fixed.returncode == 0


WATCHED = '''
import torch
import torchdoctor
from torch import nn

model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
with torchdoctor.watch() as watched:
    for step in range(6):
        optimizer.zero_grad()
        loss = model(torch.randn(8, 4)).pow(2).mean()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        loss.backward()
        optimizer.step()
        if step == 2:
            model.eval()
print(sorted((f.rule, f.line) for f in watched.findings))
'''


@pytest.mark.slow
def test_watch_reports_the_same_codes(tmp_path: Path) -> None:
    script = tmp_path / "watched.py"
    script.write_text(WATCHED, encoding="utf-8")
    ran = python(str(script), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "('TD112', 12)" in ran.stdout and "('TD131', 10)" in ran.stdout  # the top of the loop, where train() goes
