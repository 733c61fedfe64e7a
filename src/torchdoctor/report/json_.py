"""The contract's JSON report, `torchdoctor.report/1`."""

from __future__ import annotations

import json
from typing import Any, TextIO

from torchdoctor.core.report import Report


def dumps(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n"


def write(report: Report, stream: TextIO, **_: Any) -> None:
    stream.write(dumps(report))
