"""The memory account in the report: the JSON `memory` section (per-step series, censuses by
owner), `torchdoctor run --memory`'s table, the HTML plot; kept up to the end of a script
that exits or crashes mid-step."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests.run.conftest import torchdoctor_run
from torchdoctor.core.report import Report
from torchdoctor.renderers.html import memory_plot, owner_bars, render
from torchdoctor.renderers.json_ import schema
from torchdoctor.run.command import memory_size, memory_tables

TRAIN = """
import sys
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 4))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(40):
    x, y = torch.randn(64, 32), torch.randint(0, 4, (64,))
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    if step == int(sys.argv[1]):
        {end}
    loss.backward()
    optimizer.step()
"""


def valid(report: dict) -> None:  # type: ignore[type-arg]
    """The report, its memory section included, follows torchdoctor.report/1's JSON Schema."""
    jsonschema.Draft202012Validator(schema()).validate(report)


def run(tmp_path: Path, end: str, at: int, *options: str):  # type: ignore[no-untyped-def]
    (tmp_path / "train.py").write_text(TRAIN.replace("{end}", end))
    return torchdoctor_run("train.py", str(at), cwd=tmp_path, options=("--fail-on", "never", *options))


@pytest.mark.slow
def test_the_report_carries_the_series_and_the_table_is_printed(tmp_path: Path) -> None:
    ran = run(tmp_path, "pass", 99, "--memory")
    [process] = ran.report["memory"]["processes"]
    assert process["steps"] == list(range(1, 41)) and len(process["series"]["rss"]) == 40
    assert [c["step"] for c in process["censuses"] if c["phase"] == "step"] == [1, 2, 3, 8, 16, 32]
    assert process["censuses"][0]["owners"]["parameters"] == (32 * 256 + 256 + 256 * 4 + 4) * 4
    assert process["peaks"]["forward"]["bytes"] > 0 and process["final"] is True
    assert "live tensor storages by owner" in ran.stderr and "activations by module" in ran.stderr
    assert "ReLU `1`" in ran.stderr
    valid(ran.report)


@pytest.mark.slow
@pytest.mark.parametrize("end", ["sys.exit(3)", "raise RuntimeError('stop')"], ids=["exit", "crash"])
def test_a_script_that_ends_mid_step_keeps_its_account(tmp_path: Path, end: str) -> None:
    ran = run(tmp_path, end, 20)
    [process] = ran.report["memory"]["processes"]
    assert process["steps"][-1] == 20 and [c["step"] for c in process["censuses"]][-1] == 16
    assert process["outcome"] == ("crashed" if "raise" in end else "completed")
    valid(ran.report)


def test_sizes_for_the_memory_limit() -> None:
    assert memory_size("2GiB") == 2 * 2**30 and memory_size("512MiB") == 512 * 2**20 and memory_size("1.5G") == 3 * 2**29
    assert memory_size("3000000000") == 3_000_000_000 and memory_size("2gb") == 2 * 10**9
    for bad in ("two gigs", "-1GiB", "0", "5 parsecs"):
        with pytest.raises(Exception, match="size|positive"):
            memory_size(bad)


PROCESS = {
    "pid": 7, "rank": None, "device": "cpu", "steps": [1, 2, 3, 4], "series": {"rss": [100, 110, 120, 120]},
    "peak_rss": 120, "peaks": {"forward": {"bytes": 90, "step": 2}},
    "censuses": [
        {"step": 1, "phase": "forward", "total": 90, "owners": {"parameters": 40, "activations": 50},
         "activations": {"Linear `fc`": 50}, "holders": []},
        {"step": 4, "phase": "step", "total": 60, "owners": {"parameters": 40, "other": 20}, "activations": {},
         "holders": [{"name": "`history`", "bytes": 20}]},
    ],
}


def test_the_table_and_the_plot_are_drawn_from_the_section() -> None:
    report = Report(command="run", sections={"memory": {"processes": [PROCESS]}})
    [table] = memory_tables(report)
    assert "parameters and buffers" in table and "other tensors held by: `history` 20 B" in table
    assert "activations by module (step 1, end of forward): Linear `fc` 50 B" in table
    svg = memory_plot(PROCESS)
    assert svg.count("<polyline") == 1 and svg.count("<circle") == 2 and "step 4" in svg
    bars = owner_bars(PROCESS)
    assert bars.count("<rect") == 4 and "<title>activations: 50 B</title>" in bars and "step 4, step" in bars
    page = render(report)
    assert "aria-label='memory by step'" in page and "aria-label='memory by owner'" in page
    assert json.dumps(report.to_dict())  # the section is plain JSON


def test_watch_reports_the_account_too() -> None:
    import torch
    from torch import nn

    import torchdoctor

    model = nn.Linear(8, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with torchdoctor.watch() as watched:
        for _ in range(4):
            optimizer.zero_grad()
            model(torch.randn(16, 8)).sum().backward()
            optimizer.step()
    [process] = watched.report.sections["memory"]["processes"]
    assert process["censuses"][0]["owners"]["parameters"] == (8 * 2 + 2) * 4 and process["steps"] == [1, 2, 3, 4]
    data = json.loads(json.dumps(watched.report.to_dict()))
    valid(data)
    data["memory"]["processes"][0]["censuses"][0]["owners"]["parameters"] = -1  # bytes are never negative
    with pytest.raises(jsonschema.ValidationError):
        valid(data)
