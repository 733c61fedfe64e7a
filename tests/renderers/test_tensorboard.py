"""A report in TensorBoard (`run --tensorboard DIR`): series as scalars, findings as text."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorboard", reason="the tensorboard extra is not installed (pip install -e '.[test]')")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from tests import children  # noqa: E402
from tests.run.conftest import environment  # noqa: E402
from torchdoctor import cli  # noqa: E402
from torchdoctor.core import registry  # noqa: E402
from torchdoctor.core.errors import UsageError  # noqa: E402
from torchdoctor.core.report import Report  # noqa: E402
from torchdoctor.renderers import tensorboard  # noqa: E402


def events(folder: Path) -> EventAccumulator:
    accumulator = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    accumulator.Reload()
    return accumulator


def test_series_become_scalars_and_findings_text(tmp_path: Path) -> None:
    report = Report(command="run")
    report.add(registry.get("TD101").finding(file="train.py", line=3, fields={"source": "softmax | at line 2"}))
    report.sections["series"] = {
        "loss": {"kind": "line", "columns": ["loss"], "steps": [1, 2, 4], "values": [[2.0], [None], [1.0]]},
        "grad_norm": {"kind": "heatmap", "columns": ["fc1", "fc2"], "steps": [1, 2], "values": [[0.5, 0.0], [0.25, None]]},
    }
    tensorboard.write(report, tmp_path / "tb", counts_at=4)
    found = events(tmp_path / "tb")
    assert [(e.step, e.value) for e in found.Scalars("loss/loss")] == [(1, 2.0), (4, 1.0)]  # no value: no point
    assert [(e.step, e.value) for e in found.Scalars("grad_norm/fc2")] == [(1, 0.0)]
    assert [(e.step, e.value) for e in found.Scalars("torchdoctor/errors")] == [(4, 1.0)]
    text = found.Tensors("torchdoctor/findings")[0].tensor_proto.string_val[0].decode()
    assert "| error | `train.py:3` | TD101 softmax-before-cross-entropy |" in text and "softmax \\| at line 2" in text


def test_without_tensorboard_the_option_is_refused_before_running(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "tensorboard.summary.writer.event_file_writer", None)
    with pytest.raises(UsageError, match=r"pip install 'torchdoctor\[tensorboard\]'"):
        tensorboard.available()
    script = tmp_path / "never.py"
    script.write_text("open('ran', 'w')\n", encoding="utf-8")
    assert cli.main(["run", "--tensorboard", str(tmp_path / "tb"), str(script)]) == 2
    assert "needs the tensorboard package" in capsys.readouterr().err and not (tmp_path / "ran").exists()


@pytest.mark.slow
def test_run_writes_the_runs_series(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nmodel = torch.nn.Linear(3, 1)\nopt = torch.optim.Adam(model.parameters())\n"
        "for _ in range(5):\n    opt.zero_grad()\n    model(torch.randn(4, 3)).pow(2).mean().backward()\n    opt.step()\n",
        encoding="utf-8",
    )
    result = children.run([sys.executable, "-m", "torchdoctor", "run", "--tensorboard", str(tmp_path / "tb"), str(script)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=180, env=environment())
    assert result.returncode == 0, result.stderr
    found = events(tmp_path / "tb")
    assert [e.step for e in found.Scalars("loss/loss")] == [1, 2, 3, 4, 5]
    assert {"lr/Adam", "grad_norm/Linear", "step_time/backward"} <= set(found.Tags()["scalars"])
