"""`torchdoctor.check()` from Python, as `torchdoctor check` runs: the project's `[tool.torchdoctor]`
(or `config=`) and `select`/`ignore` choose the rules and severities, and `# noqa` on a finding's
line silences it."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

import torchdoctor

MODEL = '''
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return torch.softmax(self.fc(x), dim=1){suppressed}


def make():
    x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
    return {{"model": Classifier(), "data": (x, y), "loss_fn": nn.CrossEntropyLoss()}}
'''


def imported(folder: Path, suppressed: str = "") -> ModuleType:
    path = folder / f"classifier{abs(hash(suppressed))}.py"
    path.write_text(MODEL.format(suppressed=suppressed), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def rules(report: torchdoctor.Report) -> list[tuple[str, str]]:
    return [(f.rule, f.severity.value) for f in report.findings if f.rule == "TD101"]


def test_the_finding_and_what_silences_it(project: Path) -> None:
    make = imported(project).make
    assert rules(torchdoctor.check(make, progress=False, overfit_steps=20)) == [("TD101", "error")]
    assert rules(torchdoctor.check(make, ignore=["TD101"], progress=False, overfit_steps=20)) == []
    assert rules(torchdoctor.check(imported(project, "  # noqa: TD101").make, progress=False, overfit_steps=20)) == []


def test_the_projects_configuration_and_one_named_by_path(project: Path) -> None:
    make = imported(project).make
    (project / "pyproject.toml").write_text('[tool.torchdoctor]\nseverity = {TD101 = "warning"}\n', encoding="utf-8")
    assert rules(torchdoctor.check(make, progress=False, overfit_steps=20)) == [("TD101", "warning")]
    elsewhere = project / "configs" / "strict.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text('[tool.torchdoctor]\nignore = ["loss"]\n', encoding="utf-8")
    assert rules(torchdoctor.check(make, config=elsewhere, progress=False, overfit_steps=20)) == []


def test_selection_is_keyword_only_and_options_are_checked(project: Path) -> None:
    make = imported(project).make
    with pytest.raises(TypeError):
        torchdoctor.check(make, None, None, None, ["TD101"])  # type: ignore[misc]
    with pytest.raises(torchdoctor.core.errors.UsageError, match="unknown check option"):
        torchdoctor.check(make, overfit_stepz=3)  # type: ignore[call-arg]
