import io
import json
import re
import xml.etree.ElementTree as ET

from torchdoctor.core import registry
from torchdoctor.core.report import Report
from torchdoctor.renderers import FORMATS, render
from torchdoctor.renderers.github import annotation


def rendered(report: Report, fmt: str, **options) -> str:
    stream = io.StringIO()
    render(report, fmt, stream, **options)
    return stream.getvalue()


def test_json_is_the_contract_schema(report: Report) -> None:
    data = json.loads(rendered(report, "json"))
    assert data["schema"] == "torchdoctor.report/1"
    assert data["tool"] == {"name": "torchdoctor", "version": "0.1.0"}
    assert data["command"] == "check"
    assert data["summary"] == {"error": 1, "warning": 1, "info": 1}
    first = data["findings"][0]
    assert first["rule"] == "TD101" and first["severity"] == "error"
    assert first["file"] == "model.py" and first["line"] == 41 and first["column"] == 16
    for finding in data["findings"]:
        assert {"rule", "name", "category", "severity", "message", "hint", "file", "line"} <= set(finding)
    env = [f for f in data["findings"] if f["rule"] == "TD146"][0]
    assert env["file"] is None and env["line"] is None


def test_text_groups_by_severity_with_checks_and_summary(report: Report) -> None:
    text = rendered(report, "text", color=False)
    assert "❌  1. loss sanity: softmax before CE" in text
    assert "✅  4. gradient flow" in text
    assert text.index("ERRORS (1)") < text.index("WARNINGS (1)") < text.index("INFOS (1)")
    assert "model.py:41:16: TD101 [error] CrossEntropyLoss receives probabilities" in text
    assert "fix: Pass the raw logits" in text
    assert text.rstrip().endswith("torchdoctor check: 1 error, 1 warning, 1 info · 4 checks: 1 passed, 1 failed, 1 warned, 1 skipped")
    assert "\x1b[" not in text


def test_text_flat_layout_is_one_line_per_finding(report: Report) -> None:
    report.layout = "flat"
    report.checks = []
    lines = rendered(report, "text", color=False).splitlines()
    assert lines[0].startswith("TD146 [warning]")  # no location sorts first
    assert any(line.startswith("model.py:41:16: TD101 [error] CrossEntropyLoss") for line in lines)


def test_junit_one_case_per_check_failures_at_fail_on(report: Report) -> None:
    root = ET.fromstring(rendered(report, "junit", fail_on="error"))
    suite = root.find("testsuite")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == {"loss sanity", "dtypes", "dataloader", "gradient flow", "other findings"}
    assert cases["loss sanity"].find("failure") is not None
    assert cases["dtypes"].find("failure") is None and "TD146" in cases["dtypes"].find("system-out").text
    assert cases["dataloader"].find("skipped") is not None
    assert suite.get("failures") == "1" and suite.get("tests") == "5"
    root = ET.fromstring(rendered(report, "junit", fail_on="warning"))
    assert root.find("testsuite").get("failures") == "2"
    root = ET.fromstring(rendered(report, "junit", fail_on="never"))
    assert root.find("testsuite").get("failures") == "0"


def test_junit_without_checks_has_a_case_per_rule() -> None:
    root = ET.fromstring(rendered(Report(command="lint"), "junit"))
    assert [c.get("name") for c in root.iter("testcase")] == ["torchdoctor lint"]


def test_sarif_has_rules_with_docs_and_located_results(report: Report) -> None:
    data = json.loads(rendered(report, "sarif"))
    assert data["version"] == "2.1.0"
    run = data["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    td101 = next(r for r in rules if r["id"] == "TD101")
    assert "## Why is this bad?" in td101["fullDescription"]["text"]
    result = next(r for r in run["results"] if r["ruleId"] == "TD101")
    assert rules[result["ruleIndex"]]["id"] == "TD101" and result["level"] == "error"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 41, "startColumn": 16}
    env = next(r for r in run["results"] if r["ruleId"] == "TD146")
    assert "locations" not in env


def test_github_annotations_escape_properties_and_data(report: Report) -> None:
    lines = rendered(report, "github").splitlines()
    assert lines[0].startswith("::error file=model.py,line=41,col=16,title=TD101 softmax-before-cross-entropy::")
    assert "%0AFix: " in lines[0]
    finding = report.findings[0]
    assert "%3A" in annotation(type(finding)(**{**finding.__dict__, "file": "a:b,c.py"}))


def test_html_is_offline_and_escaped(report: Report) -> None:
    page = rendered(report, "html")
    assert page.startswith("<!doctype html>")
    assert "http" not in page.split("<body>")[0]
    assert "<script" not in page
    assert "model.py:41:16" in page and "CrossEntropyLoss receives probabilities" in page


def test_every_format_renders_an_empty_report() -> None:
    for fmt in FORMATS:
        assert rendered(Report(command="lint"), fmt)


def test_github_says_so_in_one_notice_when_there_is_no_finding() -> None:
    report = Report(command="lint", meta={"files": 12})
    assert rendered(report, "github") == "::notice title=torchdoctor lint::no findings in 12 files\n"
    assert rendered(Report(command="check"), "github") == "::notice title=torchdoctor check::no findings\n"


def test_sarif_embeds_only_the_rules_that_fired(report: Report) -> None:
    driver = json.loads(rendered(report, "sarif"))["runs"][0]["tool"]["driver"]
    assert [r["id"] for r in driver["rules"]] == ["TD101", "TD132", "TD146"]
    assert json.loads(rendered(Report(command="lint"), "sarif"))["runs"][0]["tool"]["driver"]["rules"] == []


def test_counts_are_singular_for_one(report: Report) -> None:
    """"1 error", never "1 errors", in every renderer that writes the counts in words."""
    for fmt in ("text", "html"):
        page = rendered(report, fmt, color=False)
        assert "1 error, 1 warning, 1 info" in page and "1 errors" not in page and "1 warnings" not in page, fmt
    report.findings.append(report.findings[0])
    assert "2 errors, 1 warning, 1 info" in rendered(report, "html")


def test_html_status_marks_have_words_and_backticks_are_code(report: Report) -> None:
    report.add(registry.get("TD150").finding(file="p.py", line=2, fields={"call": "F.softmax"}))
    report.notices.append("run `torchdoctor lint --fix` for `a<b`")
    page = rendered(report, "html")
    for status in ("passed", "failed", "warned", "skipped"):  # a word next to the emoji, for fonts without one
        assert re.search(rf"<td class='{status}'>[^<]*<span[^>]*>[^<]+</span> {status}</td>", page), status
    assert "<code>F.softmax</code> without <code>dim=</code>" in page
    assert "run <code>torchdoctor lint --fix</code> for <code>a&lt;b</code>" in page
    body = page.split("<body>", 1)[1]
    assert "`" not in body


def test_print_of_a_report_shows_the_text_report(report: Report) -> None:
    assert str(report) == rendered(report, "text", color=False).rstrip("\n")
    assert "Report(" in repr(report)  # the dataclass view stays for debugging


def test_status_of_findings() -> None:
    from torchdoctor.core import registry
    from torchdoctor.core.finding import Severity
    from torchdoctor.core.report import Status

    error = registry.get("TD101").finding(fields={"source": "x"})
    warning = error.with_severity(Severity.WARNING)
    info = error.with_severity(Severity.INFO)
    assert Status.of([info, error]) is Status.FAILED
    assert Status.of([info, warning]) is Status.WARNED
    assert Status.of([info]) is Status.PASSED and Status.of([]) is Status.PASSED
    assert Status.of([], applicable=False) is Status.SKIPPED
    assert Status.of([info], applicable=False) is Status.PASSED
