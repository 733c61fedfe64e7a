"""The contract's JSON report, `torchdoctor.report/1`."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any, TextIO

from torchdoctor.core.report import Report


def dumps(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n"


def write(report: Report, stream: TextIO, **_: Any) -> None:
    stream.write(dumps(report))


@functools.lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The JSON Schema of `torchdoctor.report/1`, shipped in the package (report.schema.json)."""
    text = resources.files("torchdoctor.renderers").joinpath("report.schema.json").read_text(encoding="utf-8")
    return dict(json.loads(text))
