"""From a rule to everything that reports it, read off the source (catalog/reporters.py)."""

from __future__ import annotations

import subprocess
import sys

from torchdoctor.catalog.reporters import commands_of, reported_by, reporters
from torchdoctor.core import registry
from torchdoctor.linter.engine import all_checks
from torchdoctor.observe.detectors import all_detectors


def test_a_rule_three_commands_report_names_each_file() -> None:
    assert reported_by("TD108") == ("lint (linter/checks/loss_inputs.py), run (observe/crash/loss.py), "
                                    "check (health/checks/forward.py)")


def test_a_table_of_rules_counts_for_every_rule_it_names() -> None:
    """run's loss detector and check's loss check read rules/loss/wrong_inputs.py, a table of rules."""
    assert commands_of("TD101") == ["lint", "run", "check"]


def test_every_rule_is_reported_by_some_command() -> None:
    assert [rule.code for rule in registry.all_rules() if not commands_of(rule.code)] == []


def test_every_registered_lint_check_and_run_detector_is_found() -> None:
    """The declared registrations agree with what the source says."""
    for check in all_checks():
        module = check.func.__module__.removeprefix("torchdoctor.").replace(".", "/") + ".py"
        for code in check.codes:
            assert ("lint", module) in reporters()[code], (code, module)
    for detector in all_detectors():
        module = detector.__module__.removeprefix("torchdoctor.").replace(".", "/") + ".py"
        for rule in detector.rules:
            assert ("run", module) in reporters()[rule.code], (rule.code, module)


def test_rule_command_prints_reported_by_without_torch() -> None:
    code = ("import sys; sys.modules['torch'] = None; from torchdoctor.catalog.rule_command import describe;"
            "from torchdoctor.core import registry; print(describe(registry.get('TD110')))")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "Reported by: lint (linter/checks/manual_update.py, linter/checks/training_step.py), run (observe/detectors/optimizer.py)" in shown.stdout, shown.stderr
