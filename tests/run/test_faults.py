"""torchdoctor's own failures: contained, reported as TD006 with no user line, never blamed on the user."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchdoctor
from tests.run.conftest import torchdoctor_run
from torchdoctor.observe.crash.explain import explain_crash
from torchdoctor.observe.crash.model import Crash
from torchdoctor.observe.faults import contain
from torchdoctor.observe.session import Session

BROKEN_OBSERVER = """
import torch
from torch import nn
from torchdoctor.observe.session import Session

def broken_observer(event):  # stands for a bug in torchdoctor's module observer
    raise RuntimeError("bug in torchdoctor")

Session.current().modules.on_call = broken_observer
torch.manual_seed(0)
model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(5):
    optimizer.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    optimizer.step()
print("trained")
"""

CRASH_IN_TORCHDOCTOR = """
import torch
from torch import nn
from torchdoctor.observe.session import Session

session = Session.current()
session.backward._end = session.report  # called with a Backward event, torchdoctor's own code raises
model = nn.Linear(4, 2)
model(torch.randn(8, 4)).pow(2).mean().backward()
"""


def test_a_contained_callback_steps_aside_after_its_first_failure() -> None:
    calls = []

    def flaky(value: int) -> int:
        calls.append(value)
        raise ValueError("bug")

    wrapped = contain("a test observer", flaky, default=-1)
    assert wrapped(1) == -1 and wrapped(2) == -1
    assert calls == [1]


def test_a_failing_observer_is_reported_as_torchdoctors_and_training_goes_on() -> None:
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    calls = []

    def broken(event: object) -> None:
        calls.append(event)
        raise RuntimeError("bug in torchdoctor")

    with torchdoctor.watch() as watched:
        session = Session.current()
        assert session is not None
        session.modules.on_call = broken
        for _ in range(4):
            optimizer.zero_grad()
            model(torch.randn(8, 4)).pow(2).mean().backward()
            optimizer.step()
    assert len(calls) == 1 and watched.report.meta["steps"] == 4
    [finding] = watched.findings
    assert finding.rule == "TD006" and finding.file is None and finding.line is None
    assert "the module observer (RuntimeError: bug in torchdoctor)" in finding.message


def test_a_user_error_through_a_stand_in_is_the_users() -> None:
    """F.cross_entropy is a torchdoctor stand-in under observation: the error inside it is
    still explained at the user's line (torchdoctor's frame only passed the call on)."""
    with pytest.raises(ValueError):  # noqa: PT011
        with torchdoctor.watch() as watched:
            F.cross_entropy(torch.randn(4, 3), torch.randint(0, 3, (5,)))
    assert [f.rule for f in watched.findings] != ["TD006"]
    assert watched.findings[0].file is not None and watched.findings[0].file.endswith("test_faults.py")


def test_a_crash_raised_by_torchdoctors_own_code_is_not_the_users() -> None:
    try:
        session = Session.start(emit=lambda finding, key: None)
        session.report(object())  # type: ignore[arg-type]  # a torchdoctor bug: raises inside session.py
    except AttributeError as exc:
        crash = Crash.from_exception(exc)
    finally:
        session.uninstall()
    assert crash.own_frame() is not None
    finding = explain_crash(crash, None)
    assert finding is not None and finding.rule == "TD006" and finding.file is None
    assert "raised inside torchdoctor's own code" in finding.message


def test_an_explanation_its_rule_refuses_falls_back_to_the_plain_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """An explainer whose fields do not fit its rule's template (a bug of ours) must not lose the
    crash: the next explainer, or TD001, says it."""
    from torchdoctor.observe.crash import explain
    from torchdoctor.rules.api.script_crashed import RULE as CRASHED

    def refused(crash: Crash, session: object) -> explain.Explanation:
        return explain.Explanation(CRASHED, {"no such field": 1})

    monkeypatch.setattr(explain, "explainers", lambda: (refused,))
    try:
        raise ValueError("the user's own error")
    except ValueError as exc:
        finding = explain_crash(Crash.from_exception(exc), None)
    assert finding is not None and finding.rule == "TD001" and "the user's own error" in finding.message


@pytest.mark.slow
def test_run_exits_2_and_says_torchdoctor_failed(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(BROKEN_OBSERVER, encoding="utf-8")
    ran = torchdoctor_run(str(script), cwd=tmp_path)
    assert ran.returncode == 2 and ran.stdout == "trained\n"
    assert ran.codes == {"TD006"} and "Traceback" not in ran.stderr
    script.write_text(CRASH_IN_TORCHDOCTOR, encoding="utf-8")
    ran = torchdoctor_run(str(script), cwd=tmp_path)
    assert ran.returncode == 2 and ran.codes == {"TD006"}, ran.stderr  # not TD001 at the user's backward() line
    assert ran.finding("TD006")["line"] is None


@pytest.mark.slow
def test_debug_mode_shows_the_internal_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "train.py"
    script.write_text(BROKEN_OBSERVER, encoding="utf-8")
    monkeypatch.setenv("TORCHDOCTOR_DEBUG", "1")
    ran = torchdoctor_run(str(script), cwd=tmp_path)
    assert "torchdoctor: internal error in the module observer" in ran.stderr and "Traceback" in ran.stderr
    assert "broken_observer" in ran.finding("TD006")["evidence"]["traceback"]
