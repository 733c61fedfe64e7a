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


#: format -> the module whose `write` renders it
_MODULES = {"text": "text", "json": "json_", "junit": "junit", "sarif": "sarif", "github": "github", "html": "html"}


def _renderer(fmt: str) -> Callable[..., None]:
    """The one renderer asked for, imported now: the HTML one alone (jinja2, markdown, pygments)
    costs a tenth of a second, which `torchdoctor run` would pay to print a text report."""
    module = importlib.import_module(f"torchdoctor.renderers.{_MODULES[fmt]}")
    write: Callable[..., None] = module.write
    return write
