"""`TorchDoctorCallback` in a real Lightning fit (CPU, tiny modules from tests/integrations/lightning_modules.py)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("lightning", reason="the lightning extra is not installed (pip install -e '.[test]')")

import torch  # noqa: E402
from lightning.pytorch import Trainer  # noqa: E402
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger  # noqa: E402
from torch.nn.modules import module as module_hooks  # noqa: E402

from tests.integrations import lightning_modules as modules  # noqa: E402
from tests.integrations.support import marked_line  # noqa: E402
from torchdoctor.integrations.lightning import TorchDoctorCallback, TorchDoctorError  # noqa: E402

pytestmark = pytest.mark.slow


def fit(module: Any, callback: TorchDoctorCallback, **options: Any) -> Trainer:
    torch.manual_seed(0)
    settings = {"max_epochs": 1, "accelerator": "cpu", "enable_progress_bar": False, "enable_model_summary": False,
                "logger": False, "enable_checkpointing": False, **options}
    trainer = Trainer(callbacks=[callback], **settings)
    trainer.fit(module, modules.loader(), modules.loader(16, seed=1))
    return trainer


@pytest.mark.parametrize("module", modules.CORRECT, ids=lambda cls: cls.__name__)
def test_a_correct_module_gets_no_finding_and_the_fit_is_left_as_it_was(module: type) -> None:
    callback = TorchDoctorCallback(print_report=False)
    fit(module(), callback)
    assert callback.report.findings == []
    assert callback.report.sections["series"]["loss"]["steps"] == list(range(1, 9))
    assert not module_hooks._has_any_global_hook()  # observation ended with the fit


@pytest.mark.parametrize("module", modules.BUGGY, ids=lambda cls: cls.__name__)
def test_each_bug_is_found_at_the_modules_own_line(module: type) -> None:
    code, line = marked_line(modules.__file__, module)
    callback = TorchDoctorCallback(print_report=False)
    fit(module(), callback)
    found = [(f.rule, Path(f.file).name, f.line) for f in callback.report.findings]
    assert found == [(code, "lightning_modules.py", line)]


def test_findings_go_to_the_trainers_loggers_and_the_report_is_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    callback = TorchDoctorCallback(output=tmp_path / "report.html")
    loggers = [CSVLogger(tmp_path, name="csv"), TensorBoardLogger(tmp_path, name="tb")]
    fit(modules.SoftmaxBeforeCrossEntropy(), callback, logger=loggers)
    assert "TD101 [error] CrossEntropyLoss receives probabilities" in capsys.readouterr().err
    with open(next((tmp_path / "csv").rglob("metrics.csv")), newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row.get("torchdoctor/errors")]
    assert rows and float(rows[-1]["torchdoctor/errors"]) == 1.0
    events = EventAccumulator(str(next((tmp_path / "tb").rglob("version_0"))), size_guidance={"tensors": 0})
    events.Reload()
    assert events.Scalars("torchdoctor/errors")[-1].value == 1.0
    assert b"TD101" in events.Tensors("torchdoctor/findings/text_summary")[0].tensor_proto.string_val[0]
    assert "TD101" in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_fail_on_error_fails_the_fit() -> None:
    with pytest.raises(TorchDoctorError, match="TD114"):
        fit(modules.HeadLeftOutOfTheOptimizer(), TorchDoctorCallback(fail_on="error", print_report=False))
    fit(modules.Classifier(), TorchDoctorCallback(fail_on="error", print_report=False))  # a clean fit goes on


class FloatLabels(modules.Classifier):
    def training_step(self, batch: Any, index: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.cross_entropy(self(x), y.float())  # bug: TD106


def test_a_crash_in_the_fit_is_explained_at_the_users_line() -> None:
    callback = TorchDoctorCallback(print_report=False)
    with pytest.raises(RuntimeError, match="expected scalar type Long|Float"):
        fit(FloatLabels(), callback)
    assert [(f.rule, f.line) for f in callback.report.findings] == [marked_line(__file__, FloatLabels)]
    assert not module_hooks._has_any_global_hook()
