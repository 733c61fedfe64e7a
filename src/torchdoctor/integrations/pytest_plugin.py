"""torchdoctor in a project's test suite (a `pytest11` plugin, active once torchdoctor is installed).

```python
def test_the_model_is_healthy(torchdoctor):
    torchdoctor.check(make)                  # fails with the findings when one reaches fail_on

def test_one_training_step(torchdoctor):
    with torchdoctor.watch():                # fails with the findings at the end of the block
        train(steps=1)

@pytest.mark.torchdoctor(fail_on="warning", ignore=["TD430"])
def test_training_loop():                    # the whole test body observed
    train(steps=2)

def test_the_training_code_lints_clean(torchdoctor):
    torchdoctor.lint("src/")
```

`fail_on` is "error" unless the marker, the call or the `torchdoctor_fail_on` ini option says
otherwise. A test fails with the text report as its message (no traceback into torchdoctor); a marked
test that raises fails with its own error, and torchdoctor's explanation of it is added to
the test's report ("Captured torchdoctor call").
Importing this plugin imports neither torch nor torchdoctor's engines: pytest loads it in
every session of an environment that has torchdoctor.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from torchdoctor.core.report import Report

MARKER = "torchdoctor(fail_on='error', select=None, ignore=None): run the test under torchdoctor.watch() and fail it with the findings"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("torchdoctor_fail_on", "the severity at which torchdoctor findings fail a test (error, warning, info)",
                  default="error")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)


class TorchDoctor:
    """The `torchdoctor` fixture: torchdoctor's checks as assertions."""

    def __init__(self, fail_on: str) -> None:
        self.fail_on = fail_on

    def check(self, model_or_factory: Any, data: Any = None, *, fail_on: str | None = None, **options: Any) -> Report:
        """`torchdoctor.check(...)` (a factory alone, or model, data, loss_fn, optimizer); fails the test on findings."""
        import torchdoctor

        options.setdefault("progress", False)
        report = torchdoctor.check(model_or_factory, data, **options)
        self.assert_clean(report, fail_on)
        return report

    @contextlib.contextmanager
    def watch(self, *, fail_on: str | None = None, select: Sequence[str] | None = None,
              ignore: Sequence[str] | None = None) -> Iterator[Any]:
        """Observe the block (one training step, say) as `torchdoctor run` would; fails the test on findings."""
        import torchdoctor

        with torchdoctor.watch(select=select, ignore=ignore) as watched:
            yield watched
        self.assert_clean(watched.report, fail_on)

    def lint(self, *paths: Any, fail_on: str | None = None, **options: Any) -> Report:
        """`torchdoctor.lint(paths)`; fails the test on findings."""
        import torchdoctor

        report: Report = torchdoctor.lint(list(paths) or ".", **options)
        self.assert_clean(report, fail_on)
        return report

    def assert_clean(self, report: Report, fail_on: str | None = None) -> None:
        threshold = fail_on or self.fail_on
        if report.fails(threshold):
            pytest.fail(f"torchdoctor found problems at or above {threshold!r}:\n{report}", pytrace=False)


@pytest.fixture
def torchdoctor(request: pytest.FixtureRequest) -> TorchDoctor:
    """torchdoctor's checks as assertions: `.check(make)`, `with .watch(): ...`, `.lint(paths)`."""
    return TorchDoctor(str(request.config.getini("torchdoctor_fail_on")))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    marker = item.get_closest_marker("torchdoctor")
    if marker is None:
        return (yield)
    import torchdoctor as api

    fail_on = marker.kwargs.get("fail_on") or str(item.config.getini("torchdoctor_fail_on"))
    watched = api.watch(select=marker.kwargs.get("select"), ignore=marker.kwargs.get("ignore")).__enter__()
    try:
        result = yield
    except BaseException as exc:  # the test's own failure stays its failure; the explanation goes beside it
        watched.__exit__(type(exc), exc, exc.__traceback__)
        if watched.report.findings:
            item.add_report_section("call", "torchdoctor", str(watched.report))
        raise
    watched.__exit__(None, None, None)
    TorchDoctor(fail_on).assert_clean(watched.report)
    return result

