"""Renderers: each turns a finished `Report` into one format. None of them analyses anything."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TextIO

from torchdoctor.core.report import FailOn, Report

FORMATS = ("text", "json", "junit", "sarif", "github", "html")


def render(report: Report, fmt: str, stream: TextIO, *, fail_on: FailOn = FailOn.ERROR, color: bool | None = None) -> None:
    """Write `report` to `stream` in `fmt` (one of FORMATS)."""
    renderer = _renderer(fmt)
    renderer(report, stream, fail_on=fail_on, color=color)


def _renderer(fmt: str) -> Callable[..., None]:
    """The writer of `fmt`, importing its module only (the HTML one pulls in jinja2 and the
    charts: a JSON report of `lint` need not pay for them)."""
    if fmt not in FORMATS:
        raise KeyError(fmt)
    module = importlib.import_module(f"torchdoctor.report.{'json_' if fmt == 'json' else fmt}")
    return module.write
