"""The sections of `torchdoctor trace` in the text, HTML and JSON reports."""

from __future__ import annotations

import io
import json

from tests.trace.test_attribute import MODEL, one_step, step
from torchdoctor.core.report import Report
from torchdoctor.renderers import render
from torchdoctor.trace.attribute import LineFacts, attribute
from torchdoctor.trace.oppath import path_of
from torchdoctor.trace.record import build


def traced_report() -> Report:
    attribution = attribute([step(0, 0), *one_step(0), step(1, 400), *one_step(400), step(2, 800)])
    facts = {MODEL: LineFacts(file="/work/train.py", line=10, source="out = model(x) < 1  # <b>", devices={"cpu"})}
    report = Report(command="trace")
    report.sections["trace"] = build(attribution, facts)
    report.sections["op_paths"] = [path_of("aten::mm").to_dict(), {"line": "train.py:99", "error": "no torch call was made on this line"}]
    return report


def rendered(report: Report, fmt: str) -> str:
    stream = io.StringIO()
    render(report, fmt, stream, color=False)
    return stream.getvalue()


def test_text_shows_the_lines_their_ops_and_backward_and_the_paths() -> None:
    text = rendered(traced_report(), "text")
    assert "2 traced steps" in text
    row = next(line for line in text.splitlines() if "train.py:10" in line)
    assert "out = model(x) < 1" in row
    assert "aten::addmm x1 [4, 2x3, 3x4 · float32]" in text  # per step, with its shapes and dtype
    assert "backward" in text and "AddmmBackward0 x1" in text
    assert "aten::mm(Tensor self, Tensor mat2) -> Tensor" in text and "native_functions.yaml" in text
    assert "train.py:99: no torch call was made on this line" in text


def test_html_has_the_table_and_the_paths_escaped_and_linked() -> None:
    html = rendered(traced_report(), "html")
    assert "<h2>Trace</h2>" in html and "out = model(x) &lt; 1  # &lt;b&gt;" in html and "# <b>" not in html
    assert "<code>train.py:10</code>" in html
    assert "href='https://github.com/pytorch/pytorch/blob/" in html and "native_functions.yaml#L" in html
    assert html.rstrip().endswith("</html>")


def test_json_carries_the_per_line_records() -> None:
    data = json.loads(rendered(traced_report(), "json"))
    assert data["schema"] == "torchdoctor.report/1" and data["command"] == "trace"
    line = next(line for line in data["trace"]["lines"] if line["location"] == "train.py:10")
    assert line["file"] == "/work/train.py" and line["line"] == 10 and line["backward"]["nodes"]["AddmmBackward0"] == 2
    assert data["op_paths"][0]["op"] == "aten::mm"
