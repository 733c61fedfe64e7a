"""Runs every check in order and turns outcomes into the Report's checks and findings.

A check that fails inside torchdoctor itself is marked skipped with the reason (and a notice),
so one broken check never hides the others.
"""

from __future__ import annotations

import time
from types import ModuleType

from torchdoctor.core import plugins
from torchdoctor.core.progress import Progress
from torchdoctor.core.report import CheckResult, Report, Status
from torchdoctor.health.context import CheckContext
from torchdoctor.health.outcome import Outcome

#: the checks, built-in and the `torchdoctor.check` plugins', in the order of the report (their
#: `ORDER`: "the model runs" first); a module with one of a check's parts has them all (core/plugins.py)
CHECKS: tuple[ModuleType, ...] = tuple(plugins.ordered(
    module for module in plugins.modules("torchdoctor.check") if hasattr(module, "NAME")
))
NAMES = tuple(check.NAME for check in CHECKS)


def status_of(outcome: Outcome) -> Status:
    if outcome.failed is not None:
        return Status.FAILED
    return Status.of(outcome.findings, applicable=outcome.skipped is None)


def detail_of(outcome: Outcome) -> str:
    if outcome.skipped is not None:
        return f"skipped: {outcome.skipped}"
    if outcome.failed is not None:
        return outcome.failed
    if outcome.findings:
        first = outcome.findings[0]
        more = f" (+{len(outcome.findings) - 1} more)" if len(outcome.findings) > 1 else ""
        return f"{first.rule} {first.message}{more}"
    return outcome.detail


def run_checks(ctx: CheckContext, report: Report) -> None:
    selected = [c for c in CHECKS if c.NAME not in ctx.options.skip]
    with Progress("torchdoctor check", len(selected), ctx.options.progress) as progress:
        for number, check in enumerate(selected, 1):
            progress.update(number, check.TITLE)
            started = time.perf_counter()
            try:
                outcome = check.run(ctx)
            except Exception as exc:  # our own failure: say so, keep going
                outcome = Outcome(skipped=f"internal error in torchdoctor: {type(exc).__name__}: {exc}")
                report.notices.append(
                    f"check {check.NAME!r} failed inside torchdoctor ({type(exc).__name__}: {exc}); please report it"
                )
            report.checks.append(CheckResult(
                name=check.NAME,
                title=check.TITLE,
                status=status_of(outcome),
                detail=detail_of(outcome),
                seconds=time.perf_counter() - started,
                rules=tuple(check.RULES),
            ))
            report.findings.extend(outcome.findings)
            report.notices.extend(outcome.notices)
