"""Every fixture: the lines marked `# expect: TD123` are flagged with those codes, and nothing else is;
a marker that pins a fragment of the message (`# expect: TD110 "never reset"`) finds it there.

Fixtures keep the bad and the similar correct code side by side (see tests/lint/fixtures/).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lint.conftest import CLEAN, FIXTURES, expected, lint_file, markers

FIXTURE_FILES = sorted(FIXTURES.glob("*.py"))
CLEAN_FILES = sorted(CLEAN.glob("*.py"))


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_fixture_findings_are_exactly_the_marked_ones(path: Path) -> None:
    found = {(f.line, f.rule) for f in lint_file(path)}
    assert found == expected(path), f"unexpected: {sorted(found - expected(path))}, missing: {sorted(expected(path) - found)}"


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_pinned_words_are_in_the_message_of_the_marked_finding(path: Path) -> None:
    messages = {(f.line, f.rule): f.message for f in lint_file(path)}
    for (line, code), fragment in markers(path).items():
        if fragment is not None:
            assert fragment in messages.get((line, code), ""), f"line {line}: {code} does not say {fragment!r}"


@pytest.mark.parametrize("path", CLEAN_FILES, ids=lambda p: p.stem)
def test_correct_training_code_gets_no_finding(path: Path) -> None:
    findings = lint_file(path)
    assert findings == [], "\n".join(f"{f.location}: {f.rule} {f.message}" for f in findings)


def test_parameters_in_a_plain_list_are_a_warning_and_modules_an_error() -> None:
    """TorchScript code keeps parameters in plain lists on purpose; modules cannot be scripted so."""
    path = FIXTURES / "module_structure.py"
    lines = path.read_text(encoding="utf-8").splitlines()
    severities = {f.line: f.severity.value for f in lint_file(path) if f.rule == "TD122"}
    parameters = next(n for n, line in enumerate(lines, 1) if "self.scales = [nn.Parameter" in line)
    modules = next(n for n, line in enumerate(lines, 1) if "self.layers = [nn.Linear" in line)
    assert (severities[parameters], severities[modules]) == ("warning", "error")


def test_modules_trained_by_their_own_optimizers_are_a_warning() -> None:
    """A plain list whose modules the class optimizes itself is trained; what it loses is .to() and the state_dict."""
    path = FIXTURES / "tensor_given_to_optimizer.py"
    lines = path.read_text(encoding="utf-8").splitlines()
    found = {f.line: f for f in lint_file(path) if f.rule == "TD122"}
    own = next(n for n, line in enumerate(lines, 1) if "self.clist = [" in line)
    plain = next(n for n, line in enumerate(lines, 1) if "self.heads = [" in line)
    assert (found[own].severity.value, found[plain].severity.value) == ("warning", "error")
    assert "own optimizers train them" in found[own].message
