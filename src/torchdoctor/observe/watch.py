"""`torchdoctor.watch()`: the detectors of `torchdoctor run`, from code, around any block.

```python
with torchdoctor.watch() as watched:
    train(model, loader)
print(watched.report.findings)
```

On leaving the block every hook and stand-in is removed. An exception raised in the block is
explained (added to the report) and propagates unchanged. Under `torchdoctor run` the run's
session is already observing: the block then collects what is found while it runs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING

from torchdoctor.core.config import Config, for_api
from torchdoctor.core.finding import Finding
from torchdoctor.core.locate import display_path
from torchdoctor.core.report import Report
from torchdoctor.observe.outcome import Outcome

if TYPE_CHECKING:
    from torchdoctor.observe.session import Session


class Watch:
    """The context manager `watch()` returns; `report` is complete once the block has exited."""

    def __init__(self, settings: Config) -> None:
        self.report = Report(command="watch")
        self._settings = settings
        self._enabled = settings.enabled_codes()
        self._found: dict[str, Finding] = {}
        self._session: Session | None = None
        self._owned = False

    def __enter__(self) -> Watch:
        from torchdoctor.observe.crash.explain import explainers
        from torchdoctor.observe.detectors import all_detectors
        from torchdoctor.observe.session import Session

        current = Session.current()
        if current is not None:
            self._session = current
            current.add_listener(self._collect)
        else:
            explainers()  # imported now rather than while an exception unwinds
            self._session = Session.start(emit=self._collect, enabled=self._enabled, detectors=all_detectors())
            self._owned = True
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        session = self._session
        if session is None:
            return
        outcome = Outcome.from_exception(exc)
        if exc is not None:
            from torchdoctor.observe.crash.explain import explain

            for finding, key in explain(exc, session):
                self._collect(finding, key)
        if self._owned:
            session.finish(outcome)
            session.uninstall()
        else:
            session.remove_listener(self._collect)
        self._session = None
        self.report.meta.update({"steps": session.steps, "backward": session.backward.completed})
        self.report.notices.extend(n for n in session.notices if n not in self.report.notices)
        if session.series is not None:
            self.report.sections["series"] = session.series.snapshot(read_device=True)
        from torchdoctor.observe.memory.state import MemoryState

        state = session.installed(MemoryState)
        if state is not None and state.timeline.censuses:
            self.report.sections["memory"] = {"processes": [state.summary()]}  # the account, as `run` reports it
        findings = [replace(f, file=display_path(f.file)) if f.file else f for f in self._found.values()]
        self.report.findings = self._settings.settle(findings)

    def _collect(self, finding: Finding, key: str) -> None:
        self._found[key] = finding

    def so_far(self) -> Report:
        """A report of what has been found until now, while the block still runs (for logging)."""
        report = Report(command=self.report.command)
        report.findings = self._settings.settle(self._found.values())
        return report

    @property
    def findings(self) -> list[Finding]:
        return self.report.findings


def watch(*, select: Sequence[str] | None = None, ignore: Sequence[str] | None = None,
          config: str | os.PathLike[str] | None = None) -> Watch:
    """Observe the training code run inside the `with` block; the findings are in `.report`.

    As `torchdoctor run` does: `[tool.torchdoctor]` of the nearest pyproject.toml above the
    working directory (or of `config`) chooses the rules and their severities, `select` /
    `ignore` take rule codes, code prefixes, names or categories as on the command line, and a
    `# noqa: TD...` on a finding's line silences it.
    """
    return Watch(for_api(select=select, ignore=ignore, config=config))
