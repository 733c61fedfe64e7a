"""Shared helpers: run the check on a source snippet or a lab program, on one thread (these
models are tiny, and several threads on a busy 2-core machine are many times slower)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from torchdoctor.core.report import Report
from torchdoctor.health.api import check_target

_counter = itertools.count()


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def check_source(tmp_path: Path) -> Callable[..., Report]:
    """Write `source` (a module with make()) to a file and check it; returns the Report."""

    def run(source: str, **options: object) -> Report:
        path = tmp_path / f"snippet_{next(_counter)}.py"
        path.write_text(source, encoding="utf-8")
        options.setdefault("progress", False)
        return check_target(f"{path}:make", **options)

    return run


def codes(report: Report) -> set[str]:
    return {f.rule for f in report.findings}


def by_rule(report: Report, code: str) -> list:  # type: ignore[type-arg]
    return [f for f in report.findings if f.rule == code]


def status(report: Report, name: str) -> str:
    return next(c.status.value for c in report.checks if c.name == name)
