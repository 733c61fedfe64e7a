"""For every test: the child processes it started are shown when it fails (see tests/children.py).
At the end: the warm Python of tests/warm.py, if one was started, ends (and is waited for)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests import children


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    children.STARTED.clear()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed and children.STARTED:
        report.sections.extend(children.sections())
        children.STARTED.clear()  # once, on the phase that failed


def pytest_sessionfinish(session: pytest.Session) -> None:
    warm = sys.modules.get("tests.warm")
    if warm is not None:
        warm.close()
