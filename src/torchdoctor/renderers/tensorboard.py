"""A report in TensorBoard: every per-step series as scalars (`loss/loss`, `lr/AdamW`,
`grad_norm/encoder.fc1`, `step_time/data`, ...) and the findings as text (Markdown), written
with TensorBoard's own event writer (neither torch nor TensorFlow is needed).

`torchdoctor run --tensorboard DIR` writes the run's series when the run ends; the framework
callbacks (Lightning, Hugging Face) write to the loggers the trainer already has instead.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from torchdoctor.core.errors import UsageError
from torchdoctor.core.report import Report

MISSING = "--tensorboard needs the tensorboard package: pip install 'torchdoctor[tensorboard]'"


def available() -> None:
    """Raise UsageError (exit 2, before anything runs) when TensorBoard's writer is missing."""
    try:
        import tensorboard.summary.writer.event_file_writer  # noqa: F401
    except ImportError:
        raise UsageError(MISSING) from None


def findings_markdown(report: Report) -> str:
    """The findings as a Markdown table (TensorBoard's text tab renders Markdown)."""
    lines = [f"**torchdoctor {report.command}**: {report.summary_text()}", ""]
    if report.findings:
        lines += ["| severity | where | rule | what | fix |", "| --- | --- | --- | --- | --- |"]
        for f in report.sorted_findings():
            cells = [f.severity.value, f"`{f.location}`" if f.location else "", f"{f.rule} {f.name}", f.message, f.hint]
            lines.append("| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in cells) + " |")
    return "\n".join(lines)


def write(report: Report, folder: Path, *, series: bool = True, counts_at: int | None = None) -> None:
    """Write `report` as one event file (`*.torchdoctor`) in `folder`, created if needed: its
    series as scalars (unless `series` is False: a trainer that logs its own curves), the
    findings as text, and with `counts_at`, their counts as scalars at that step."""
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    folder.mkdir(parents=True, exist_ok=True)
    writer = EventFileWriter(str(folder), filename_suffix=".torchdoctor")
    now = time.time()
    values = scalars(report.sections.get("series") or {}) if series else []
    if counts_at is not None:
        values += [(tag, counts_at, value) for tag, value in report.metrics().items()]
    for tag, step, value in values:
        writer.add_event(Event(wall_time=now, step=step, summary=Summary(value=[Summary.Value(tag=tag, simple_value=value)])))
    text = _text("torchdoctor/findings", findings_markdown(report))
    writer.add_event(Event(wall_time=now, step=counts_at or 0, summary=Summary(value=[text])))
    writer.close()


def scalars(series: dict[str, Any]) -> list[tuple[str, int, float]]:
    """(tag, step, value) for every recorded value of every table: `<table>/<column>`."""
    out = []
    for name, table in series.items():
        if not isinstance(table, dict):
            continue
        columns = table.get("columns") or []
        for step, row in zip(table.get("steps") or [], table.get("values") or []):
            out += [(f"{name}/{column}", int(step), float(value)) for column, value in zip(columns, row) if value is not None]
    return out


def _text(tag: str, markdown: str) -> Any:
    """A summary value of TensorBoard's text plugin (what `SummaryWriter.add_text` writes)."""
    from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    tensor = TensorProto(dtype="DT_STRING", string_val=[markdown.encode("utf-8")],
                         tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary.Value(tag=tag, metadata=metadata, tensor=tensor)
