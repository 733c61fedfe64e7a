"""What a check of `torchdoctor check` returns (`Outcome`), and the small texts the checks share
(a value's shape, a parameter's module): a service module, so that no check imports another."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from torchdoctor.core.finding import Finding


@dataclass
class Outcome:
    """What one check found. `skipped` gives the reason it could not run; `failed` marks a
    failure that another check explains (so it carries no finding of its own); `notices` go to
    the report's notes (what the reader must not miss, e.g. a safety net that fired)."""

    findings: list[Finding] = field(default_factory=list)
    detail: str = ""
    skipped: str | None = None
    failed: str | None = None
    notices: list[str] = field(default_factory=list)


def shape(value: Any) -> str:
    dims = getattr(value, "shape", None)
    return "(" + ", ".join(str(d) for d in dims) + ")" if dims is not None else type(value).__name__


def module_of(parameter_name: str) -> str:
    return parameter_name.rpartition(".")[0]


def group_by_module(names: Iterable[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for name in names:
        grouped.setdefault(module_of(name), []).append(name)
    return grouped
