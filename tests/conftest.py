"""For every test: the child processes it started are shown when it fails (see tests/children.py).
At the end: the warm Python of tests/warm.py, if one was started, ends (and is waited for).
At the start: Ctrl-C reaches the scripts the tests start, even when the suite itself was started
in the background (below)."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests import children


def pytest_configure(config: pytest.Config) -> None:
    """A shell starts a background job (`pytest ... &`, `nohup`) with SIGINT ignored, and an ignored
    signal stays ignored across exec: the scripts that tests interrupt would never see their Ctrl-C,
    under plain python as under torchdoctor. A handler of our own is reset to the default on exec."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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
