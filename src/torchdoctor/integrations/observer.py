"""What every framework callback does around a fit: `torchdoctor.watch()` from the start of
training to its end (or its crash, explained at the user's line), then the report: printed,
written to files, and optionally an error that fails the fit.

The callbacks (lightning.py, huggingface.py) only map their framework's events onto `start`
and `stop`, and hand the report to the framework's loggers.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING

from torchdoctor.core.config import FAIL_ON
from torchdoctor.core.errors import UsageError
from torchdoctor.core.report import FailOn, Report
from torchdoctor.renderers import outputs

if TYPE_CHECKING:
    from torchdoctor.observe.watch import Watch


class TorchDoctorError(RuntimeError):
    """Raised at the end of a fit when findings reach `fail_on`; `.report` holds them all."""

    def __init__(self, report: Report, fail_on: str) -> None:
        super().__init__(f"torchdoctor found problems at or above {fail_on!r}:\n{report}")
        self.report = report


class FitObserver:
    """`start()` when training starts, `stop(exception)` when it ends; `report` afterwards.

    Options (the same for every framework): `select` / `ignore` (rule codes, prefixes, names or
    categories), `fail_on` ("never" by default; "error" fails the fit when an error is found),
    `print_report` (the text report on stderr at the end), `output` (report files, in the format
    their suffix names: `report.html`, `report.json`, ...).
    """

    def __init__(
        self,
        *,
        select: Sequence[str] | None = None,
        ignore: Sequence[str] | None = None,
        fail_on: str = "never",
        print_report: bool = True,
        output: str | PathLike[str] | Sequence[str | PathLike[str]] = (),
    ) -> None:
        if fail_on not in FAIL_ON:
            raise UsageError(f"fail_on={fail_on!r}: expected one of {', '.join(FAIL_ON)}")
        self.select, self.ignore, self.fail_on, self.print_report = select, ignore, fail_on, print_report
        paths = [output] if isinstance(output, (str, PathLike)) else list(output)
        self.outputs = outputs.resolve([Path(p) for p in paths])  # checked now, before the fit
        self.report: Report | None = None
        self._watch: Watch | None = None

    @property
    def watching(self) -> bool:
        return self._watch is not None

    def start(self) -> None:
        if self._watch is not None:  # a fit that ended without telling us (an exception): close it first
            self.stop()
        from torchdoctor.observe.watch import watch

        self._watch = watch(select=self.select, ignore=self.ignore).__enter__()

    def so_far(self) -> Report | None:
        """The findings until now, while the fit runs (None when not observing)."""
        return self._watch.so_far() if self._watch is not None else None

    def stop(self, exception: BaseException | None = None, *, main_process: bool = True) -> Report | None:
        """End the observation (explaining `exception` when the fit crashed) and publish the
        report; `main_process` False (another rank) keeps it quiet."""
        watched, self._watch = self._watch, None
        if watched is None:
            return None
        watched.__exit__(type(exception) if exception else None, exception, exception.__traceback__ if exception else None)
        self.report = report = watched.report
        report.command = "fit"
        if main_process:
            outputs.write(report, self.outputs, FailOn(self.fail_on))
            if self.print_report:
                print(report, file=sys.stderr)
        return report

    def check(self) -> None:
        """Raise TorchDoctorError when the report's findings reach `fail_on`."""
        if self.report is not None and self.report.fails(self.fail_on):
            raise TorchDoctorError(self.report, self.fail_on)
