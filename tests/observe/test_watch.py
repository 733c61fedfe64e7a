"""`torchdoctor.watch()`: the run detectors from code, and a clean exit."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules import module as module_hooks
from torch.optim.optimizer import _global_optimizer_pre_hooks

import torchdoctor


def train(model: nn.Module, optimizer: torch.optim.Optimizer, steps: int = 4, softmax: bool = False) -> None:
    x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
    for _ in range(steps):
        optimizer.zero_grad()
        out = model(x)
        loss = F.cross_entropy(F.softmax(out, dim=1) if softmax else out, y)
        loss.backward()
        optimizer.step()


def test_findings_of_the_block() -> None:
    model = nn.Linear(8, 4)
    with torchdoctor.watch() as watched:
        train(model, torch.optim.SGD(model.parameters(), lr=0.1), softmax=True)
    assert [f.rule for f in watched.report.findings] == ["TD101"]
    assert watched.report.meta["steps"] == 4


def test_select_and_ignore() -> None:
    model = nn.Linear(8, 4)
    with torchdoctor.watch(ignore=["loss"]) as watched:
        train(model, torch.optim.SGD(model.parameters(), lr=0.1), softmax=True)
    assert watched.report.findings == []


def test_the_projects_configuration_noqa_and_a_config_by_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As `torchdoctor run` does: `[tool.torchdoctor]` above the working directory, or `config=`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.torchdoctor]\nseverity = {TD101 = "warning"}\n', encoding="utf-8")
    model = nn.Linear(8, 4)
    with torchdoctor.watch() as watched:
        train(model, torch.optim.SGD(model.parameters(), lr=0.1), softmax=True)
    assert [(f.rule, f.severity.value) for f in watched.report.findings] == [("TD101", "warning")]
    assert [f.rule for f in watched.so_far().findings] == ["TD101"]
    (tmp_path / "strict.toml").write_text('[tool.torchdoctor]\nignore = ["TD101"]\n', encoding="utf-8")
    with torchdoctor.watch(config=tmp_path / "strict.toml") as watched:
        train(model, torch.optim.SGD(model.parameters(), lr=0.1), softmax=True)
    assert watched.report.findings == []
    script = tmp_path / "silenced.py"
    script.write_text("import torch.nn.functional as F\n\n\ndef loss(out, y):\n"
                      "    return F.cross_entropy(F.softmax(out, dim=1), y)  # noqa: TD101\n", encoding="utf-8")
    namespace: dict[str, object] = {}
    exec(compile(script.read_text(), str(script), "exec"), namespace)  # noqa: S102 - the user's file, with its comment
    x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
    with torchdoctor.watch() as watched:
        namespace["loss"](model(x), y).backward()  # type: ignore[operator]
    assert watched.report.findings == []


def test_selection_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        torchdoctor.watch(["TD101"])  # type: ignore[misc]


def test_everything_is_put_back() -> None:
    originals = (F.cross_entropy, torch.autograd.backward, torch.optim.Optimizer.zero_grad, nn.Module.zero_grad, torch.optim.Optimizer.__init__)
    with torchdoctor.watch():
        assert F.cross_entropy is not originals[0]
        assert module_hooks._global_forward_pre_hooks and _global_optimizer_pre_hooks
    assert (F.cross_entropy, torch.autograd.backward, torch.optim.Optimizer.zero_grad, nn.Module.zero_grad, torch.optim.Optimizer.__init__) == originals
    assert not module_hooks._global_forward_pre_hooks and not module_hooks._global_forward_hooks
    assert not module_hooks._has_any_global_hook()  # torch leaks with_kwargs ids unless removed
    assert not _global_optimizer_pre_hooks


def test_an_exception_is_explained_and_propagates() -> None:
    model = nn.Linear(8, 4)
    with pytest.raises(RuntimeError, match="mat1 and mat2"):
        with torchdoctor.watch() as watched:
            model(torch.randn(2, 9))
    assert [f.rule for f in watched.report.findings] == ["TD417"]


def test_module_hooks_go_after_warm_up() -> None:
    """Only the cheap per-step hooks stay once the first optimizer steps are over."""
    model = nn.Linear(8, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with torchdoctor.watch():
        train(model, optimizer, steps=1)
        assert module_hooks._global_forward_pre_hooks
        train(model, optimizer, steps=3)
        assert not module_hooks._global_forward_pre_hooks
        assert all(not p._backward_hooks for p in model.parameters())


def test_a_failing_detector_does_not_stop_training() -> None:
    from torchdoctor.observe.detector import Detector
    from torchdoctor.observe.session import Session

    class Broken(Detector):
        rules = ()

        def on_step(self, event: object) -> None:
            raise ValueError("bug in a detector")

    found = []
    session = Session.start(emit=lambda f, k: found.append(f), detectors=[Broken])
    try:
        model = nn.Linear(8, 4)
        train(model, torch.optim.SGD(model.parameters(), lr=0.1))
    finally:
        session.uninstall()
    assert [f.rule for f in found] == ["TD006"]  # once: the detector stepped aside after its first failure
    assert found[0].file is None and "the detector Broken.on_step (ValueError: bug in a detector)" in found[0].message
