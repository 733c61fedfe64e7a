"""`--output FILE` (repeatable), `--output-format` and `--html FILE`: the report files every
reporting command writes.

Why apart from `--format`: the report printed to the terminal shares a stream with other
output (`run`'s script writes to the same stderr), so a report meant for a machine or a
browser goes to a file of its own. The format of each file follows its suffix (`.json`,
`.html`, `.sarif`, `.xml` for JUnit, `.txt` for the text report); any other suffix gets the
JSON report, as the contract says. `--output-format` overrides the suffix for every file.

The paths are checked before the command does anything (`run` has not started the script
yet), so a typo costs one line and exit status 2, not a whole training run. A missing folder
is not created: it is as likely a typo as a wish.
"""

from __future__ import annotations

import argparse
import io
import os
from dataclasses import dataclass
from pathlib import Path

from torchdoctor.core.errors import UsageError
from torchdoctor.core.report import FailOn, Report
from torchdoctor.renderers import FORMATS, render

#: file suffix -> report format (any other suffix: the JSON report)
SUFFIXES = {".json": "json", ".html": "html", ".htm": "html", ".sarif": "sarif", ".xml": "junit", ".txt": "text"}


@dataclass(frozen=True)
class Output:
    """One report file and the format written to it."""

    path: Path
    format: str

    def beside(self, tag: str) -> Output:
        """The same kind of file next to this one, `report.<tag>.json` (another rank's report)."""
        return Output(self.path.with_name(f"{self.path.stem}.{tag}{self.path.suffix}"), self.format)


def add_options(group: argparse._ArgumentGroup) -> None:
    suffixes = ", ".join(f"{suffix} {fmt}" for suffix, fmt in SUFFIXES.items() if suffix != ".htm")
    group.add_argument(
        "--output", metavar="FILE", type=Path, action="append",
        help=f"also write the report to FILE, in the format its suffix names ({suffixes}; any other: json); "
        "repeat for several files",
    )
    group.add_argument("--output-format", choices=FORMATS, metavar="FORMAT",
                       help=f"the format of every --output file, whatever its suffix ({', '.join(FORMATS)})")
    group.add_argument("--html", metavar="FILE", type=Path, action="append",
                       help="also write the HTML report (one offline page: findings with their code, curves) to FILE")


def format_for(path: Path, override: str | None = None) -> str:
    return override or SUFFIXES.get(path.suffix.lower(), "json")


def resolve(paths: list[Path] | None, override: str | None = None, html: list[Path] | None = None) -> list[Output]:
    """The files to write, checked now: exit status 2 with one line for a path that cannot be written.
    `html` (`--html FILE`) are HTML reports whatever their suffix."""
    outputs: list[Output] = []
    seen: set[Path] = set()
    given_files = [(given, "--output", None) for given in paths or []] + [(given, "--html", "html") for given in html or []]
    for given, option, fixed in given_files:
        path = Path(os.path.abspath(given))
        if path in seen:
            raise UsageError(f"{option} {str(given)!r} is given twice")
        seen.add(path)
        problem = _unwritable(path)
        if problem:
            raise UsageError(f"cannot write {option} {str(given)!r}: {problem}")
        outputs.append(Output(path, fixed or format_for(path, override)))
    if override and not paths:
        raise UsageError("--output-format needs an --output FILE to apply to")
    return outputs


def _unwritable(path: Path) -> str | None:
    """Why `path` cannot be written as a report, or None."""
    parent = path.parent
    if path.is_dir():
        return "it is a folder"
    if not parent.exists():
        return f"the folder {str(parent)!r} does not exist (create it first)"
    if not parent.is_dir():
        return f"{str(parent)!r} is not a folder"
    if path.exists() and not os.access(path, os.W_OK):
        return "the file is not writable"
    if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
        return f"the folder {str(parent)!r} is not writable"
    return None


def write(report: Report, outputs: list[Output], fail_on: FailOn) -> None:
    """Render the report into each file (rendered in full first, so a renderer's failure leaves no half file)."""
    for output in outputs:
        buffer = io.StringIO()
        render(report, output.format, buffer, fail_on=fail_on, color=False)
        try:
            output.path.write_text(buffer.getvalue(), encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write --output {str(output.path)!r}: {exc.strerror}") from None
