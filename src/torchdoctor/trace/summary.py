"""The report of `torchdoctor trace`: run's report, the per-line table, the diagnoses, notes.

The table goes into `report.sections["trace"]` (in the JSON report under `trace`; the text
and HTML renderers draw it), the op paths into `report.sections["op_paths"]`.

No torch here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from torchdoctor.core.finding import Finding
from torchdoctor.core.locate import display_path
from torchdoctor.core.report import Report
from torchdoctor.trace.diagnose import diagnose
from torchdoctor.trace.options import TraceOptions


def add_trace(report: Report, traces: list[dict[str, Any]], options: TraceOptions) -> None:
    """Add the traced process's record (the main process, or the lowest rank) to the report."""
    if not traces:
        report.notices.append(_nothing_traced(report, options))
        return
    chosen = sorted(traces, key=lambda t: (t.get("rank") is not None, t.get("rank") or 0))[0]
    if not chosen.get("traced") and chosen.get("ended") in ("exited", "interrupted"):
        report.notices.append(_nothing_traced(report, options))  # training ended where the trace began
        return
    section = {k: v for k, v in chosen.items() if k not in ("type", "paths")}
    for line in section.get("lines", []):
        if line.get("file"):
            line["file"] = display_path(line["file"])
    report.sections["trace"] = section
    paths = chosen.get("paths") or []
    if paths:
        report.sections["op_paths"] = paths
    report.notices.extend(_notes(chosen, options, len(traces)))
    known = {(f.rule, f.file, f.line) for f in report.findings}
    for finding in diagnose(chosen):
        shown = _displayed(finding)
        if (shown.rule, shown.file, shown.line) not in known:  # run's own detector may have said it
            report.add(shown)


def _displayed(finding: Finding) -> Finding:
    return replace(finding, file=display_path(finding.file)) if finding.file else finding


def _nothing_traced(report: Report, options: TraceOptions) -> str:
    steps = int(report.meta.get("steps") or 0)
    if steps and steps <= options.skip:
        return (f"nothing was traced: the script made {steps} optimizer step(s), and tracing starts after {options.skip} "
                "(use a smaller --skip)")
    return "nothing was traced: no optimizer step (or backward() call) was observed"


def _notes(found: dict[str, Any], options: TraceOptions, processes: int) -> list[str]:
    first = options.skip + 1
    traced = int(found.get("traced", 0))
    steps = f"step {first}" if traced <= 1 else f"steps {first}-{first + traced - 1}"
    notes = []
    ended = found.get("ended")
    if ended == "profiler-in-use":
        return ["nothing was traced: the script was running torch's profiler itself when the trace was to start "
                "(one profiler at a time; use --skip to trace other steps)"]
    if ended == "steps":
        after = "the script then stopped (--stop)" if options.stop else "the script then ran on without the trace"
        notes.append(f"traced {steps} ({traced} of {traced} asked); {after}")
    else:
        how = {"crashed": "crashed", "interrupted": "was interrupted", "exited": "ended"}.get(str(ended), "ended")
        notes.append(f"the script {how} during the trace: the table covers {steps} up to that point "
                     f"({traced} complete of the {options.steps} asked)")
    if processes > 1:
        notes.append(f"{processes} processes were traced; the table is the first one's (the lowest rank)")
    if any(line.get("compiled") for line in found.get("lines", [])):
        notes.append("lines marked [compiled] ran torch.compile'd code: its ops are seen only as the compiled call")
    if found.get("chrome"):
        notes.append(f"Chrome trace written to {display_path(found['chrome'])} (open it in https://ui.perfetto.dev)")
    return notes
