"""For every test: the child processes it started are shown when it fails (see tests/children.py)."""

from __future__ import annotations

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
