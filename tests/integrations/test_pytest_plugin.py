"""The pytest plugin (`pytest11` entry point): a project's own test run, in a real pytest process."""

from __future__ import annotations

import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest

from tests import children
from tests.run.conftest import environment

PROJECT_TESTS = '''
import pytest
import torch
import torch.nn.functional as F
from torch import nn


def make(softmax=False):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    if softmax:
        model.append(nn.Softmax(dim=1))
    data = (torch.randn(16, 4), torch.randint(0, 3, (16,)))
    return {"model": model, "data": data, "loss_fn": nn.CrossEntropyLoss(),
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1)}


def step(model, optimizer, softmax=False):
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    optimizer.zero_grad()
    out = model(x)
    loss = F.cross_entropy(F.softmax(out, dim=1) if softmax else out, y)
    loss.backward()
    optimizer.step()


def test_check_clean(torchdoctor):
    torchdoctor.check(make, overfit_steps=30)


def test_check_buggy(torchdoctor):
    torchdoctor.check(lambda: make(softmax=True), overfit_steps=30)


def test_watch_clean(torchdoctor):
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with torchdoctor.watch():
        step(model, optimizer)


def test_watch_buggy(torchdoctor):
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with torchdoctor.watch():
        step(model, optimizer, softmax=True)


@pytest.mark.torchdoctor
def test_marked_clean():
    model = nn.Linear(4, 3)
    step(model, torch.optim.SGD(model.parameters(), lr=0.1))


@pytest.mark.torchdoctor
def test_marked_buggy():
    model = nn.Linear(4, 3)
    step(model, torch.optim.SGD(model.parameters(), lr=0.1), softmax=True)


@pytest.mark.torchdoctor(ignore=["TD101"])
def test_marked_buggy_but_ignored():
    model = nn.Linear(4, 3)
    step(model, torch.optim.SGD(model.parameters(), lr=0.1), softmax=True)


@pytest.mark.torchdoctor
def test_marked_crash():
    model = nn.Linear(4, 3)
    F.cross_entropy(model(torch.randn(2, 4)), torch.tensor([0.0, 1.0])).backward()


def test_lint_buggy(torchdoctor, tmp_path):
    (tmp_path / "train.py").write_text("import torch.nn.functional as F\\nF.cross_entropy(F.softmax(x, dim=1), y)\\n")
    torchdoctor.lint(tmp_path)
'''


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """test name -> "passed" or the failure message, from one pytest run of a small project."""
    folder = tmp_path_factory.mktemp("project")
    (folder / "test_model.py").write_text(textwrap.dedent(PROJECT_TESTS), encoding="utf-8")
    (folder / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n", encoding="utf-8")
    ran = children.run([sys.executable, "-m", "pytest", "-q", "--junitxml", str(folder / "junit.xml"), "-p", "no:xdist"],
                       cwd=folder, capture_output=True, text=True, timeout=300, env=environment())
    found = {"terminal": ran.stdout}
    for case in ET.parse(folder / "junit.xml").getroot().iter("testcase"):
        failure = case.find("failure")
        found[case.get("name", "")] = "passed" if failure is None else failure.get("message", "") + (failure.text or "")
    return found


@pytest.mark.slow
@pytest.mark.parametrize("name", ["test_check_clean", "test_watch_clean", "test_marked_clean", "test_marked_buggy_but_ignored"])
def test_clean_code_passes(outcomes: dict[str, str], name: str) -> None:
    assert outcomes[name] == "passed"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["test_check_buggy", "test_watch_buggy", "test_marked_buggy", "test_lint_buggy"])
def test_buggy_code_fails_with_the_findings_as_the_message(outcomes: dict[str, str], name: str) -> None:
    assert "torchdoctor found problems at or above 'error'" in outcomes[name]
    assert "TD101 [error] CrossEntropyLoss receives probabilities" in outcomes[name]
    assert "torchdoctor/" not in outcomes[name].split("TD101", 1)[0]  # no traceback into torchdoctor


@pytest.mark.slow
def test_a_crash_in_a_marked_test_fails_as_itself_with_the_explanation_beside(outcomes: dict[str, str]) -> None:
    failure = outcomes["test_marked_crash"]
    assert failure.startswith("RuntimeError: expected target dtype to be Long or Byte, but got Float")
    section = outcomes["terminal"].split("Captured torchdoctor call", 1)[1]
    line = textwrap.dedent(PROJECT_TESTS).splitlines().index("    F.cross_entropy(model(torch.randn(2, 4)), torch.tensor([0.0, 1.0])).backward()") + 1
    assert section.split("\n")[2].strip().startswith(f"test_model.py:{line}: TD106 [error] CrossEntropyLoss gets class targets")


def test_the_plugin_imports_neither_torch_nor_the_engines() -> None:
    code = "import sys, torchdoctor.integrations.pytest_plugin; print(sorted(m for m in ('torch', 'torchdoctor.run', 'torchdoctor.lint') if m in sys.modules))"
    result = children.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_the_marker_is_registered(pytestconfig: pytest.Config) -> None:
    """This very suite runs with --strict-markers and the plugin installed."""
    assert any(line.startswith("torchdoctor(") for line in pytestconfig.getini("markers"))


def test_the_plugin_is_an_entry_point() -> None:
    from importlib.metadata import entry_points

    assert [e.value for e in entry_points(group="pytest11") if e.name == "torchdoctor"] == ["torchdoctor.integrations.pytest_plugin"]
