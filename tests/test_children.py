"""A failing test that started child processes shows what they wrote (tests/children.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests import children

ROOT = Path(__file__).resolve().parents[1]


def test_a_failure_report_includes_the_childrens_stderr(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_runtest_makereport, pytest_runtest_setup  # noqa: F401\n")
    (tmp_path / "test_fails.py").write_text(
        "import sys\nfrom tests import children\n\n"
        "def test_child_exit_status():\n"
        "    done = children.run([sys.executable, '-c', 'import sys; sys.exit(\"rank 1 died: the cause\")'],\n"
        "                        capture_output=True, text=True)\n"
        "    assert done.returncode == 0\n\n"
        "def test_passes_quietly():\n"
        "    children.run([sys.executable, '-c', 'import sys; print(\"noise\", file=sys.stderr)'], capture_output=True, text=True)\n"
    )
    done = children.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout
    assert "child process 1 of 1" in done.stdout and "(exit status 1)" in done.stdout
    assert "rank 1 died: the cause" in done.stdout
    assert "noise" not in done.stdout  # a passing test shows nothing
