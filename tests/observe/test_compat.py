"""A detector whose torch API this torch lacks steps aside with a notice naming the version
(Detector.unsupported; docs/compat.md): never a crash, never a wrong finding."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

import torchdoctor
from torchdoctor.core.rule import Rule
from torchdoctor.observe import detectors
from torchdoctor.observe.detector import Detector, lacking_torch
from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.session import Session, observation_lacks
from torchdoctor.rules.loss.softmax_before_cross_entropy import RULE as TD101


def train(model: nn.Module, optimizer: torch.optim.Optimizer, steps: int = 4, softmax: bool = True) -> None:
    x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
    for _ in range(steps):
        optimizer.zero_grad()
        out = model(x)
        F.cross_entropy(F.softmax(out, dim=1) if softmax else out, y).backward()
        optimizer.step()


class NeedsAFutureTorch(Detector):
    """Stands for a detector whose API came in a later torch than the one installed."""

    rules: tuple[Rule, ...] = (TD101,)

    @classmethod
    def unsupported(cls) -> str | None:
        return lacking_torch("TD101 from the live loss call (torch.future_api)", "99.0")

    def on_step(self, event: object) -> None:
        raise AssertionError("a detector that stepped aside is never told of an event")


def test_the_notice_names_the_torch_version() -> None:
    assert lacking_torch("graph breaks (torch._dynamo.explain)", "2.5") == (
        f"graph breaks (torch._dynamo.explain) not checked: it needs torch >= 2.5, and this is torch {torch.__version__}")


def test_the_session_leaves_the_detector_out_and_says_so() -> None:
    found = []
    session = Session.start(emit=lambda finding, key: found.append(finding), detectors=[NeedsAFutureTorch])
    try:
        model = nn.Linear(8, 4)
        train(model, torch.optim.SGD(model.parameters(), lr=0.1))
    finally:
        session.finish(Outcome())
        session.uninstall()
    assert not any(isinstance(d, NeedsAFutureTorch) for d in session.detectors)
    assert session.notices == [lacking_torch("TD101 from the live loss call (torch.future_api)", "99.0")]
    assert found == []  # no crash (TD006), no finding


def test_watch_reports_the_notice_and_the_other_detectors_still_find(monkeypatch) -> None:
    built_in = detectors.all_detectors()
    monkeypatch.setattr(detectors, "all_detectors", lambda: (*built_in, NeedsAFutureTorch))
    model = nn.Linear(8, 4)
    with torchdoctor.watch() as watched:
        train(model, torch.optim.SGD(model.parameters(), lr=0.1))
    assert watched.report.notices == [lacking_torch("TD101 from the live loss call (torch.future_api)", "99.0")]
    assert [f.rule for f in watched.report.findings] == ["TD101"]  # the built-in detector still reports it


def test_no_built_in_detector_steps_aside_on_this_torch() -> None:
    """The torch the suite runs on has what every built-in detector needs (the CI legs: 2.13, 2.14)."""
    assert {cls.__name__: cls.unsupported() for cls in detectors.all_detectors() if cls.unsupported()} == {}


def test_this_torch_has_what_observation_needs() -> None:
    """torch 2.3.1 lacks keyword arguments in its global module hooks (observation_lacks says so,
    and Session.start refuses with the version: docs/compat.md); the tested releases have them."""
    assert observation_lacks() is None
