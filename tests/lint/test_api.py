"""`torchdoctor.lint(paths) -> Report`: the command's findings, from Python, without torch."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import torchdoctor
from tests import children
from torchdoctor.core.errors import UsageError

BUGGY = "import torch\nimport torch.nn.functional as F\n\n\ndef loss(logits, y):\n    return F.cross_entropy(F.softmax(logits, dim=1), y)\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(BUGGY, encoding="utf-8")
    (tmp_path / "clean.py").write_text("x = 1\n", encoding="utf-8")
    return tmp_path


def test_lint_returns_the_report_the_command_prints(project: Path) -> None:
    report = torchdoctor.lint(project)
    assert report.command == "lint" and [(f.rule, f.file, f.line) for f in report.findings] == [("TD101", "train.py", 6)]
    assert report.meta["files"] == 2 and "fatal_rules" not in report.meta
    assert "train.py:6" in str(report)


def test_select_ignore_and_the_project_configuration(project: Path) -> None:
    assert torchdoctor.lint(["train.py"], ignore=["loss"]).findings == []
    assert torchdoctor.lint("train.py", select=["TD102"]).findings == []
    (project / "pyproject.toml").write_text('[tool.torchdoctor]\nseverity = {TD101 = "warning"}\n', encoding="utf-8")
    assert [f.severity.value for f in torchdoctor.lint("train.py").findings] == ["warning"]
    (project / "train.py").write_text(BUGGY.replace("y)\n", "y)  # noqa: TD101\n"), encoding="utf-8")
    assert torchdoctor.lint(".").findings == []


def test_a_missing_path_is_an_error(project: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        torchdoctor.lint("nope.py")


def test_lint_does_not_import_torch_and_stays_the_function_when_the_linter_is_imported(project: Path) -> None:
    """`torchdoctor.lint` is a plain function; importing the linter's modules does not replace it."""
    code = ("import sys, inspect, torchdoctor, torchdoctor.linter.checks as checks; r = torchdoctor.lint('train.py');"
            "print(len(r.findings), 'torch' in sys.modules, inspect.isfunction(torchdoctor.lint))")
    result = children.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["1", "False", "True"]


def test_the_decorators_old_name_still_works_with_a_deprecation_warning() -> None:
    from torchdoctor.linter import api

    with pytest.warns(DeprecationWarning, match="now lint_check"):
        assert api.check is api.lint_check


def test_help_shows_the_functions_signature_and_options() -> None:
    """`help(torchdoctor.lint)` documents the function: its signature and options, not the linter's design."""
    import pydoc

    shown = pydoc.render_doc(torchdoctor.lint, renderer=pydoc.plaintext)
    assert "lint(paths: " in shown and "-> 'Report'" in shown
    assert all(f"`{option}`" in shown for option in ("select", "ignore", "exclude", "config", "respect_gitignore"))
    assert "How it works" not in shown and "ast.parse" not in shown
