"""`TorchDoctorCallback` in a real `transformers.Trainer` training (CPU, tiny models from configs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers", reason="the huggingface extra is not installed (pip install -e '.[test]')")
pytest.importorskip("accelerate", reason="transformers' Trainer needs accelerate (pip install -e '.[test]')")

import torch  # noqa: E402
from torch.nn.modules import module as module_hooks  # noqa: E402
from transformers import BertForSequenceClassification, Trainer, TrainingArguments  # noqa: E402

from tests.integrations import hf_models as models  # noqa: E402
from tests.integrations.support import marked_line  # noqa: E402
from torchdoctor.integrations.huggingface import TorchDoctorCallback, TorchDoctorError  # noqa: E402

pytestmark = pytest.mark.slow


def train(model: Any, callback: TorchDoctorCallback, folder: Path, data: Any = None, **options: Any) -> Trainer:
    settings = {"max_steps": 6, "per_device_train_batch_size": 8, "report_to": [], "use_cpu": True, "logging_steps": 2,
                "save_strategy": "no", "disable_tqdm": True, **options}
    trainer = Trainer(model=model, args=TrainingArguments(output_dir=str(folder), **settings),
                      train_dataset=data or models.Tokens(), callbacks=[callback])
    trainer.train()
    return trainer


def test_a_pretrained_style_model_and_a_correct_custom_one_get_no_finding(tmp_path: Path) -> None:
    for model in (BertForSequenceClassification(models.config()), models.TextClassifier()):
        callback = TorchDoctorCallback(print_report=False)
        torch.manual_seed(0)
        train(model, callback, tmp_path)
        assert callback.report.findings == [], type(model).__name__
        assert callback.report.sections["series"]["loss"]["steps"] == list(range(1, 7))
    assert not module_hooks._has_any_global_hook()


@pytest.mark.parametrize("model", models.BUGGY, ids=lambda cls: cls.__name__)
def test_each_bug_is_found_at_the_models_own_line(model: type, tmp_path: Path) -> None:
    code, line = marked_line(models.__file__, model)
    callback = TorchDoctorCallback(print_report=False)
    torch.manual_seed(0)
    train(model(), callback, tmp_path)
    assert [(f.rule, Path(f.file).name, f.line) for f in callback.report.findings] == [(code, "hf_models.py", line)]


def test_counts_are_logged_and_tensorboard_gets_the_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    callback = TorchDoctorCallback(output=tmp_path / "report.json")
    torch.manual_seed(0)
    trainer = train(models.SoftmaxBeforeCrossEntropy(), callback, tmp_path, report_to=["tensorboard"])
    assert trainer.state.log_history[0]["torchdoctor/errors"] == 1.0  # found at the first step, logged at the second
    assert "TD101 [error]" in capsys.readouterr().err
    events = EventAccumulator(str(tmp_path / "runs" / "torchdoctor"), size_guidance={"tensors": 0})
    events.Reload()
    assert events.Scalars("torchdoctor/errors")[0].value == 1.0 and events.Scalars("torchdoctor/errors")[0].step == 6
    assert b"TD101" in events.Tensors("torchdoctor/findings")[0].tensor_proto.string_val[0]
    assert '"rule": "TD101"' in (tmp_path / "report.json").read_text(encoding="utf-8")


def test_fail_on_error_fails_the_training(tmp_path: Path) -> None:
    with pytest.raises(TorchDoctorError, match="TD120"):
        train(models.EncoderCutFromTheGraph(), TorchDoctorCallback(fail_on="error", print_report=False), tmp_path)


def test_a_crash_is_explained_after_close(tmp_path: Path) -> None:
    callback = TorchDoctorCallback(print_report=False)
    with pytest.raises(IndexError) as crash:
        train(models.TextClassifier(), callback, tmp_path, data=models.Tokens(top_label=models.CLASSES))  # labels 0..3
    report = callback.close(crash.value)
    assert [f.rule for f in report.findings] == ["TD105"]
    assert not module_hooks._has_any_global_hook()
