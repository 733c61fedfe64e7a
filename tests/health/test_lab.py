"""Every lab program gets the diagnosis its README promises; every fixed twin gets no error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.lab import LAB, readme_column
from torchdoctor.core.finding import Severity
from torchdoctor.core.locate import display_path
from torchdoctor.health.api import check_target


def promised() -> dict[str, set[str]]:
    """README row number -> the codes in its "`torchdoctor check` says" column."""
    return {row: set(re.findall(r"TD\d{3}", text)) for row, text in readme_column(3).items()}


PROGRAMS = sorted(LAB.glob("[0-9][0-9]_*.py"))
#: the line each diagnosis must point at, found by its text in the program
LINES = {
    "01": r"torch\.softmax\(", "03": r"self\.blocks = \[", "04": r"F\.dropout\(", "05": r"torch\.from_numpy\(table\)",
    "06": r"labels\.float\(\)", "07": r"classes \+ 1", "08": r'"loss_fn": nn\.MSELoss\(\)', "09": r"optimizer = torch\.optim",
    "10": r"self\.backbone = nn\.Sequential", "11": r"\.detach\(\)\.numpy\(\)", "12": r"torch\.sigmoid\(", "13": r"def forward",
    "14": r"self\.rng = ", "15": r"torch\.log\(x\)", "17": r"collate_fn=lambda", "18": r"self\.temperature = ",
    "19": r"optimizer = torch\.optim\.AdamW", "20": r"F\.softmax\(", "21": r"def backward", "22": r"x = images\.float\(\)",
    "23": r"model = Network\(\)", "26": r"def forward",
    "29": r"torch\.softmax\(", "30": r"\.detach\(\)\.numpy\(\)",
    "31": r"distance = torch\.sqrt", "32": r"scores = torch\.exp\(", "33": r"e = x / x\.norm", "34": r"masked_fill\(padding",
    "35": r"energy = \(self\.proj", "36": r"model = Regressor\(\)",
    "47": r"nn\.AvgPool2d\(8\)", "48": r"loader = DataLoader\(Clips\(\)",
    "49": r"optimizer = torch\.optim\.SGD", "54": r"dist = diff\.pow\(2\)",
}


def line_of(program: Path, pattern: str) -> int:
    lines = program.read_text(encoding="utf-8").splitlines()
    found = [number for number, text in enumerate(lines, 1) if re.search(pattern, text)]
    assert len(found) == 1, (program.name, pattern, found)
    return found[0]
PROMISED = promised()


def test_every_program_has_a_twin_and_a_readme_row() -> None:
    assert len(PROGRAMS) >= 14
    for program in PROGRAMS:
        assert (LAB / "fixed" / program.name).is_file(), program.name
        assert program.name[:2] in PROMISED, f"{program.name} has no row in examples/lab/README.md"


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_check_gives_the_promised_diagnosis(program: Path) -> None:
    report = check_target(f"{program}:make", progress=False)
    expected = PROMISED[program.name[:2]]
    found = {f.rule for f in report.findings}
    assert expected <= found, f"{program.name}: expected {sorted(expected)}, got {sorted(found)}"
    if not expected:  # the loop bugs: nothing for the check to see, and nothing invented
        assert not [f for f in report.findings if f.severity is Severity.ERROR]
    number = program.name[:2]
    for finding in report.findings:
        if finding.rule in expected:
            assert finding.file == display_path(str(program)), (finding.rule, finding.file)
            assert finding.line == line_of(program, LINES[number]), (finding.rule, finding.line)
    assert not report.notices, report.notices


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_fixed_twin_has_no_error(program: Path) -> None:
    report = check_target(f"{LAB / 'fixed' / program.name}:make", progress=False)
    errors = [f"{f.rule} {f.message}" for f in report.findings if f.severity is Severity.ERROR]
    assert not errors
    assert not (PROMISED[program.name[:2]] & {f.rule for f in report.findings})
    assert not report.notices, report.notices
