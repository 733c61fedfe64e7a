"""The HTML report's page model and pictures (the real browser is in test_browser.py)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from torchdoctor.core import registry
from torchdoctor.core.finding import Edit, Fix
from torchdoctor.core.report import CheckResult, Report, Status
from torchdoctor.renderers.html import render
from torchdoctor.renderers.html.charts import MISSING, ZERO, charts, heatmap, line_chart, nice_ticks, stacked_chart
from torchdoctor.renderers.html.code import context, highlighted_lines, markdown

SOURCE = "import torch\n\n\ndef f(x):\n    y = torch.softmax(x, 1)\n    return y  # 'end'\n"
DOMAIN = (0.5, 4.5)


def table(kind: str, columns: list[str], values: list[list[float | None]], steps: list[int] | None = None, **extra) -> dict:
    return {"kind": kind, "unit": "", "columns": columns, "steps": steps or list(range(1, len(values) + 1)), "values": values, **extra}


def test_nice_ticks_are_round() -> None:
    assert nice_ticks(0, 1) == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert nice_ticks(3, 97) == [20, 40, 60, 80]


def test_a_curve_breaks_where_nothing_was_recorded_and_goes_log_over_two_decades() -> None:
    chart = line_chart("loss", table("line", ["loss"], [[1.0], [None], [0.5], [0.25]]), DOMAIN)
    assert [len(s) for s in chart.lines[0]["segments"]] == [1, 2] and chart.note == ""
    chart = line_chart("loss", table("line", ["loss"], [[1000.0], [10.0], [1.0], [0.5]]), DOMAIN)
    assert chart.note == "log scale" and {t.label for t in chart.y_ticks} >= {"1", "10", "100", "1000"}
    assert line_chart("lr", table("line", ["SGD"], [[0.1]] * 4), DOMAIN).y_ticks[0].label == "0"  # a constant: from zero


def test_the_heatmap_sets_zero_and_missing_apart() -> None:
    chart = heatmap("grad_norm", table("heatmap", ["a", "b"], [[1.0, 0.0], [10.0, None], [100.0, 0.0], [1e3, 0.0]]), DOMAIN)
    colours = [cell["colour"] for cell in chart.cells]
    assert colours[4:] == [ZERO, MISSING, ZERO, ZERO]  # row b
    assert len(set(colours[:4])) == 4  # row a: four decades, four colours
    assert [r.label for r in chart.rows] == ["a", "b"]


def test_a_long_heatmap_merges_steps_and_shows_the_largest() -> None:
    values = [[1.0]] * 20000
    values[12345] = [1e6]
    chart = heatmap("grad_norm", table("heatmap", ["a"], values), (0.5, 20000.5))
    assert len(chart.cells) < 12001 and "largest value shown" in chart.note
    assert len({cell["colour"] for cell in chart.cells}) == 2  # the spike survives the merge


def test_step_time_is_stacked_and_one_long_step_does_not_flatten_the_rest() -> None:
    rows = [[0.01, 0.02]] * 99 + [[5.0, 0.0]]
    chart = stacked_chart("step_time", table("stacked", ["data", "forward"], rows, unit="s"), (0.5, 100.5))
    assert len(chart.cells) == 200 and "1 longer step cut at the top (longest 5 s)" == chart.note
    assert chart.y_ticks[-1].label.endswith("ms")
    assert chart.legend[0]["label"].startswith("data: median 10 ms")


def test_a_memory_series_is_drawn_by_its_kind_with_bytes_on_the_axis() -> None:
    """The memory account writes its own table; the report draws it like the others."""
    memory = table("stacked", ["parameters", "gradients", "activations"], [[4096.0, 4096.0, 2.0 ** 20]] * 3, unit="bytes")
    (chart,) = charts({"memory": memory})
    assert chart.kind == "stacked" and chart.y_label == ""
    assert all(tick.label.endswith((" B", " KiB", " MiB")) for tick in chart.y_ticks) and len(chart.y_ticks) > 2
    assert chart.legend[0]["label"] == "parameters: median 4 KiB, 0%"


def test_every_chart_shares_the_step_axis_and_unknown_kinds_are_left_to_the_json() -> None:
    drawn = charts({
        "loss": table("line", ["loss"], [[1.0]] * 4),
        "update_ratio": table("heatmap", ["a"], [[0.1], [0.1]], steps=[2, 4]),
        "histogram": table("violin", ["a"], [[1.0]]),
        "empty": table("line", [], []),
    })
    assert [c.name for c in drawn] == ["loss", "update_ratio"]
    assert [t.label for t in drawn[0].x_ticks] == [t.label for t in drawn[1].x_ticks]


def test_code_context_marks_the_finding_lines(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(SOURCE, encoding="utf-8")
    lines = context(str(path), 5, around=2)
    assert [(line.number, line.marked) for line in lines] == [(3, False), (4, False), (5, True), (6, False)]
    assert '<span class="nn">torch</span>' not in lines[2].html and '<span class="n">softmax</span>' in lines[2].html
    assert context(str(tmp_path / "gone.py"), 1) == [] and context(str(path), 99) == [] and context(None, None) == []


def test_a_string_over_several_lines_is_highlighted_line_by_line() -> None:
    lines = highlighted_lines('x = """a\n<b>\n"""\n')
    assert lines[1] == '<span class="s2">&lt;b&gt;</span>'


def test_rule_docs_are_markdown_with_python_examples_and_no_raw_html() -> None:
    page = markdown("## What it does\n\nA `x` <script>alert(1)</script>\n\n```python\nimport torch\n```\n")
    assert "<h4>What it does</h4>" in page and "<code>x</code>" in page and "&lt;script&gt;" in page
    assert '<pre class="code"><code><span class="kn">import</span>' in page


@pytest.fixture
def source_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    Path("model.py").write_text(SOURCE, encoding="utf-8")
    return "model.py"


def test_each_finding_shows_its_lines_its_fix_and_links_its_rule_doc(source_file: str) -> None:
    report = Report(command="run")
    report.add(registry.get("TD101").finding(file=source_file, line=5, column=8,
                                             fields={"source": "softmax at model.py:5"}))
    page = render(report)
    card = page[page.index('<article class="finding"'):page.index("</article>")]
    assert 'class="ln marked"><span class="no">5</span>' in card
    assert "Fix:</strong> Pass the raw logits" in card
    assert 'href="#rule-TD101"' in card and 'id="rule-TD101"' in page
    assert page.count('class="rule-doc"') == 1  # only the rules that fired
    assert "<h4>What it does</h4>" in page


def test_lint_groups_by_file_and_shows_a_fix_as_a_diff(source_file: str, tmp_path: Path) -> None:
    (tmp_path / "other.py").write_text("x = 1\n", encoding="utf-8")
    report = Report(command="lint")
    fix = Fix("Pass `dim=1`", (Edit(5, 26, 5, 26, ", dim=1"),))
    report.add(registry.get("TD150").finding(file=source_file, line=5, column=8, fields={"call": "torch.softmax"},
                                             fix=fix))
    report.add(registry.get("TD150").finding(file="other.py", line=1, fields={"call": "F.softmax"}))
    page = render(report)
    assert re.findall(r'<section class="file" id="file-\d+">\s*<h3>([^<]+)', page) == ["model.py ", "other.py "]
    assert '<div class="ln del"><code>-    y = torch.softmax(x, 1)</code>' in page
    assert '<div class="ln add"><code>+    y = torch.softmax(x, 1, dim=1)</code>' in page


def test_checks_are_a_table_with_their_evidence() -> None:
    report = Report(command="check")
    report.add(registry.get("TD101").finding(file="gone.py", line=4, fields={"source": "softmax"},
                                             evidence={"probabilities": True}))
    report.checks = [CheckResult("loss", "loss", Status.FAILED, "softmax before CE", 0.25, ("TD101",)),
                     CheckResult("grad-flow", "gradient flow", Status.PASSED, "every parameter", 0.5, ("TD120",))]
    page = render(report)
    rows = html.unescape(page[page.index('<section id="checks">'):]).split("<tr id=")[1:]
    assert len(rows) == 2 and "failed" in rows[0] and '"probabilities": true' in rows[0] and "0.25 s" in rows[0]
    assert "passed" in rows[1] and "every parameter" in rows[1]


def test_dist_shows_latency_and_bandwidth_per_size() -> None:
    report = Report(command="dist")
    report.sections["distributed"] = {"bandwidth": [
        {"backend": "gloo", "op": "all_reduce", "bytes": 4096, "seconds": 0.0002, "ranks": 2, "algbw_gbps": 0.02, "busbw_gbps": 0.02},
        {"backend": "gloo", "op": "barrier", "bytes": 0, "seconds": 0.0001, "ranks": 2}]}
    page = render(report)
    assert "<td class=\"num\">4 KiB</td>" in page and "0.2 ms" in page and "0.02 GB/s" in page
    assert "<td class=\"num\">—</td>" in page  # a barrier has no bandwidth


def test_other_sections_are_shown_as_json_and_the_page_stays_offline(source_file: str) -> None:
    report = Report(command="env")
    report.sections["environment"] = {"torch": "2.13.0", "url": "https://example.com/<x>"}
    report.add(registry.get("TD101").finding(file=source_file, line=5, fields={"source": "`https://x`"}))
    page = render(report)
    assert '<section id="section-environment">' in page and "https://example.com/&lt;x&gt;" in page
    # nothing is loaded from anywhere: no script, no source, no stylesheet, no font (links in rule docs are links)
    assert "<script" not in page and "src=" not in page and "<link" not in page
    assert "@import" not in page and "url(" not in page


def test_a_section_with_a_drawing_shows_it_above_its_json(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchdoctor.renderers import html as html_report

    monkeypatch.setitem(html_report.SECTION_DRAWINGS, "memory", lambda section: f"<svg class='memory'><text>{len(section['processes'])}</text></svg>")
    report = Report(command="run")
    report.sections["memory"] = {"processes": [{"pid": 7}]}
    report.sections["environment"] = {"torch": "2.13.0"}
    page = render(report)
    memory = page[page.index('<section id="section-memory">'):page.index('<section id="section-environment">')]
    assert memory.index("<svg class='memory'><text>1</text></svg>") < memory.index("<details>")  # drawn, not escaped
    assert "&#34;pid&#34;: 7" in memory or '"pid": 7' in html.unescape(memory)
    assert "<svg" not in page[page.index('<section id="section-environment">'):]  # no drawing: JSON only


def test_the_page_says_nothing_it_was_not_given() -> None:
    """No stray words from the highlighter's CSS (its comments name token types: `Generic.Traceback`),
    so that a search of the page finds only the report."""
    page = render(Report(command="run"))
    assert "Traceback" not in page and "/*" not in page


def test_findings_are_marked_on_the_curves_at_their_step() -> None:
    """A loss spike on the loss curve, a stall on the step time: a dashed mark at the step, named."""
    spike = {"step": 3, "code": "TD496", "label": "loss spike: 7.2e+04 (median 0.35)"}
    stall = {"step": 2, "code": "TD497", "label": "stall: 12 s without a step"}
    loss = line_chart("loss", table("line", ["loss"], [[1.0], [0.8], [7e4], [9e4]], marks=[spike]), DOMAIN)
    assert [round(m["x"]) for m in loss.marks] == [round(loss.plot["x"] + 2.5 / 4 * loss.plot["w"])]
    assert loss.legend[-1]["label"] == "findings at their step (TD496)"
    times = stacked_chart("step_time", table("stacked", ["data", "other"], [[0.01, 0.0], [12.0, 0.0], [0.01, 0.0], [0.01, 0.0]],
                                             marks=[stall]), DOMAIN)
    assert len(times.marks) == 1 and "stall: 12 s" in times.marks[0]["label"]
    assert line_chart("loss", table("line", ["loss"], [[1.0], [0.5]]), DOMAIN).marks == []  # none given, none drawn
    report = Report(command="run")
    report.sections["series"] = {"loss": table("line", ["loss"], [[1.0], [0.8], [7e4], [9e4]], marks=[spike])}
    page = render(report)
    figure = page[page.index('<figure id="chart-loss"'):page.index("</figure>", page.index('<figure id="chart-loss"'))]
    assert '<g class="mark" data-code="TD496"><title>TD496 at step 3: loss spike: 7.2e+04 (median 0.35)</title>' in figure
