"""Where the lab programs (examples/lab) are, for the tests of every command that diagnoses them."""

from __future__ import annotations

from pathlib import Path

LAB = Path(__file__).resolve().parents[1] / "examples" / "lab"
#: the buggy programs' stems, in order; each has a corrected twin in `LAB / "fixed"`
PROGRAMS = sorted(p.stem for p in LAB.glob("[0-9][0-9]_*.py")) if LAB.is_dir() else []


def readme_column(index: int) -> dict[str, str]:
    """Row number ("01") -> the text of one column of the README's table, to test what it promises."""
    rows = {}
    for line in (LAB / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > index and cells[0].isdigit():
            rows[cells[0]] = cells[index]
    return rows
