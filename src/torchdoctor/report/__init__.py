"""Renderers: each turns a finished `Report` into one format. None of them analyses anything."""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from torchdoctor.core.report import FailOn, Report

FORMATS = ("text", "json", "junit", "sarif", "github", "html")


def render(report: Report, fmt: str, stream: TextIO, *, fail_on: FailOn = FailOn.ERROR, color: bool | None = None) -> None:
    """Write `report` to `stream` in `fmt` (one of FORMATS)."""
    renderer = _renderers()[fmt]
    renderer(report, stream, fail_on=fail_on, color=color)


def _renderers() -> dict[str, Callable[..., None]]:
    from torchdoctor.report import github, html, json_, junit, sarif, text

    return {
        "text": text.write,
        "json": json_.write,
        "junit": junit.write,
        "sarif": sarif.write,
        "github": github.write,
        "html": html.write,
    }
