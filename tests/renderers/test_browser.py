"""The HTML report in a real headless browser (Chromium): every command's page loads with no
console message, no exception, no failed or remote resource, and shows what it should.

Chromium comes from Debian's packages (`apt-get install chromium`; .ci/run installs it). Where
it cannot be installed, these tests are skipped and say so.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import children
from tests.renderers.browser import Browser, Page, executable
from tests.run.conftest import environment

pytestmark = pytest.mark.skipif(
    executable() is None, reason="no Chromium to load the HTML report in (apt-get install chromium; .ci/run does)"
)

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "examples" / "lab"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser() as opened:
        yield opened


def torchdoctor(*args: str, cwd: Path) -> int:
    result = children.run([sys.executable, "-m", "torchdoctor", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=environment())
    return result.returncode


def clean(page: Page, path: Path) -> None:
    """Nothing went wrong, and nothing but the file itself was asked for."""
    assert page.console == [] and page.exceptions == [], (page.console, page.exceptions)
    assert [entry for entry in page.log if entry.startswith(("error", "warning"))] == []
    assert page.requests == [path.resolve().as_uri()]


def test_the_browser_sees_what_goes_wrong(browser: Browser, tmp_path: Path) -> None:
    """The checks below can fail: a page with a console error, an exception and a remote resource."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!doctype html><img src='http://127.0.0.1:9/x.png'><script>console.error('boom'); nope();</script>")
    page = browser.load(bad)
    assert page.console == ["error: boom"] and "nope is not defined" in page.exceptions[0]
    assert any("Failed to load resource" in entry for entry in page.log) and "http://127.0.0.1:9/x.png" in page.requests


@pytest.mark.slow
def test_a_run_report_shows_findings_with_code_and_the_curves(browser: Browser, tmp_path: Path) -> None:
    program = LAB / "36_learning_rate_explodes.py"
    html, data = tmp_path / "report.html", tmp_path / "report.json"
    assert torchdoctor("run", "--html", str(html), "--output", str(data), str(program), cwd=tmp_path) == 1
    page = browser.load(html)
    clean(page, html)
    findings = json.loads(data.read_text(encoding="utf-8"))["findings"]
    assert browser.evaluate("document.querySelectorAll('article.finding').length") == len(findings)
    assert browser.evaluate("document.querySelectorAll('article.finding .ln.marked').length") >= len(findings)
    drawn = browser.evaluate(
        "[...document.querySelectorAll('figure.chart')].map(f => [f.id, f.querySelector('svg').getBoundingClientRect().height,"
        " f.querySelectorAll('polyline, rect, polygon').length])"
    )
    assert [name for name, _, _ in drawn] == ["chart-loss", "chart-lr", "chart-grad_norm", "chart-update_ratio", "chart-step_time"]
    assert all(height > 50 and marks > 0 for _, height, marks in drawn), drawn
    # the rule's doc is one click away
    browser.evaluate("document.querySelector('article.finding a.rule').click()")
    assert browser.evaluate("location.hash").startswith("#rule-TD")
    assert browser.evaluate("Math.abs(document.querySelector(location.hash).getBoundingClientRect().top) < 5")


@pytest.mark.slow
def test_a_check_report_has_the_checks_table(browser: Browser, tmp_path: Path) -> None:
    html = tmp_path / "check.html"
    assert torchdoctor("check", "--html", str(html), "--no-progress", f"{LAB / '12_sigmoid_before_bce_with_logits.py'}:make",
                       cwd=tmp_path) == 1
    page = browser.load(html)
    clean(page, html)
    assert browser.evaluate("document.querySelectorAll('#checks tbody tr').length") == 14
    assert browser.evaluate("document.querySelector('#checks td.failed') !== null")


def test_a_lint_report_groups_findings_by_file(browser: Browser, tmp_path: Path) -> None:
    html = tmp_path / "lint.html"
    programs = [str(LAB / "01_softmax_before_cross_entropy.py"), str(LAB / "02_missing_zero_grad.py")]
    assert torchdoctor("lint", "--html", str(html), *programs, cwd=ROOT) == 1
    page = browser.load(html)
    clean(page, html)
    files = browser.evaluate("[...document.querySelectorAll('section.file > h3')].map(h => h.firstChild.textContent.trim())")
    assert files == ["examples/lab/01_softmax_before_cross_entropy.py", "examples/lab/02_missing_zero_grad.py"]


@pytest.mark.slow
def test_a_dist_report_has_the_bandwidth_table(browser: Browser, tmp_path: Path) -> None:
    html = tmp_path / "dist.html"
    assert torchdoctor("dist", "--nproc", "2", "--sizes", "1K,64K", "--html", str(html), cwd=tmp_path) == 0
    page = browser.load(html)
    clean(page, html)
    sizes = browser.evaluate("[...document.querySelectorAll('#bandwidth tbody tr td:nth-child(3)')].map(td => td.textContent)")
    assert {"1 KiB", "64 KiB"} <= set(sizes)


@pytest.mark.slow
@pytest.mark.parametrize(("program", "options", "code", "charts"), [
    ("55_corrupted_sample_spikes_loss.py", (), "TD496", ["chart-loss"]),
    ("56_worker_retries_missing_file.py", ("--stall-timeout", "1"), "TD497", ["chart-loss", "chart-step_time"]),
])
def test_a_run_report_marks_spikes_and_stalls_on_the_curves(
    browser: Browser, tmp_path: Path, program: str, options: tuple[str, ...], code: str, charts: list[str]
) -> None:
    html = tmp_path / "report.html"
    torchdoctor("run", *options, "--html", str(html), str(LAB / program), cwd=tmp_path)
    page = browser.load(html)
    clean(page, html)
    marks = browser.evaluate(
        f"[...document.querySelectorAll('g.mark[data-code=\"{code}\"]')].map(g => {{"
        " const svg = g.closest('svg').getBoundingClientRect(), box = g.getBoundingClientRect();"
        " return [g.closest('figure').id, box.height > 20 && box.left >= svg.left && box.right <= svg.right,"
        " g.querySelector('title').textContent]; })"
    )
    assert [figure for figure, _, _ in marks] == charts, marks
    assert all(inside and title.startswith(f"{code} at step ") for _, inside, title in marks), marks
