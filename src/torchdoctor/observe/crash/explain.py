"""From an uncaught exception to one finding: the first explainer that recognises it wins.

An explainer is a function `(crash, session) -> Explanation | SILENT | None`. It matches the
exception's message (stable fragments, never whole texts: PyTorch rewords them), and may use
the live locals of the failing frames and what the session observed (module names,
DataLoaders, optimizers) to name things. `session` is None when torch was never imported.
Unrecognised crashes become TD001 at the innermost line of user code.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from torchdoctor.core import plugins
from torchdoctor.core.finding import Finding, Severity
from torchdoctor.core.rule import Rule
from torchdoctor.observe import reporting
from torchdoctor.observe.crash.model import Crash, Frame
from torchdoctor.observe.events import Location
from torchdoctor.observe.faults import debugging
from torchdoctor.rules.api.run_internal_error import RULE as INTERNAL_ERROR
from torchdoctor.rules.api.script_crashed import RULE as CRASHED

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed


@dataclass(frozen=True)
class Explanation:
    """What an explainer says: the rule, its template fields, where (default: the crash's
    innermost user line), and the rule's variant when its own templates do not fit."""

    rule: Rule
    fields: dict[str, Any]
    at: Location | None = None
    evidence: dict[str, Any] | None = None
    variant: str | None = None  # the rule's variant whose templates the fields fill


#: returned by an explainer when the crash is reported by the process where it happened
SILENT = object()

Explainer = Callable[[Crash, "Observed | None"], "Explanation | object | None"]


@functools.cache
def explainers() -> tuple[Explainer, ...]:
    """The `EXPLAINERS` of the modules here and of the `torchdoctor.crash` plugins, by the
    modules' `ORDER` (core/plugins.py): the first that explains a crash says it."""
    found = [module for module in plugins.modules("torchdoctor.crash") if hasattr(module, "EXPLAINERS")]
    return tuple(explainer for module in plugins.ordered(found) for explainer in module.EXPLAINERS)


def explain(exception: BaseException, session: Observed | None = None) -> list[tuple[Finding, str]]:
    """The finding (with its record key) for an uncaught exception; none for Ctrl-C and exit()."""
    if isinstance(exception, (KeyboardInterrupt, SystemExit, GeneratorExit)):
        return []
    finding = explain_crash(Crash.from_exception(exception), session)
    if finding is None:
        return []
    return [(finding, f"crash:{finding.rule}:{finding.file}:{finding.line}")]


def explain_crash(crash: Crash, session: Observed | None) -> Finding | None:
    own = crash.own_frame()
    if own is not None:  # torchdoctor's bug, not a line of the user's to change
        where = f"{own.function} ({os.path.basename(own.file)}:{own.line})"
        evidence = {"where": where, "error": crash.headline, **({"traceback": crash.traceback_text} if debugging() else {})}
        return reporting.build(INTERNAL_ERROR, None, {"error": crash.headline, "where": where},
                               {"variant": "script-stopped", "evidence": evidence})
    inner = crash.inner()
    candidates = [c for c in (inner, crash, *crash.causes) if c is not None]
    for candidate in candidates:
        for explainer in explainers():
            try:
                said = explainer(candidate, session)
                if said is SILENT:
                    return None
                if isinstance(said, Explanation):
                    return _finding(said, candidate, crash)
            except Exception:  # noqa: BLE001 - a failed explanation (or fields its rule refuses) falls back to the plain one
                continue
    origin = inner or crash
    where = f" (raised in {origin.origin})" if origin.origin else ""
    return _at(CRASHED, origin, origin.user_frame(), {"exception": origin.headline + where})


def _finding(said: Explanation, crash: Crash, outer: Crash) -> Finding:
    # a worker's traceback may hold no user line (it failed in collate): the loop that asked for the batch
    frame = crash.user_frame() or outer.user_frame()
    location = said.at if said.at is not None else ((frame.file, frame.line) if frame else None)
    evidence = {"exception": crash.headline, **({"raised_in": crash.origin} if crash.origin else {}), **(said.evidence or {})}
    return reporting.build(said.rule, location, said.fields,
                           {"severity": Severity.ERROR, "evidence": evidence, "rank": crash.rank, "variant": said.variant})


def _at(rule: Rule, crash: Crash, frame: Frame | None, fields: dict[str, Any]) -> Finding:
    evidence = {"exception": crash.headline, **({"raised_in": crash.origin} if crash.origin else {})}
    location = (frame.file, frame.line) if frame else None
    return reporting.build(rule, location, fields, {"severity": Severity.ERROR, "evidence": evidence, "rank": crash.rank})
