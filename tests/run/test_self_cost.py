"""What observing costs the whole process: the runner and the observed process import only what
they need (start-up is paid by every run), and `--profile-self` says which detector costs what."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests import children
from tests.run.conftest import environment, torchdoctor_run
from torchdoctor.observe.self_cost import STEADY, WARMUP, SelfCost, merged, table

#: what a JSON report from `run` does not need in the runner: the other renderers (rich, jinja2,
#: markdown, pygments), the other commands, torch
NOT_FOR_A_JSON_REPORT = ("rich", "jinja2", "markdown_it", "pygments", "torchdoctor.renderers.text", "torchdoctor.renderers.html",
                         "torchdoctor.linter.command", "torchdoctor.trace.summary", "torchdoctor.catalog.reporters", "torch")

TRAINING = textwrap.dedent("""\
    import torch
    from torch import nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(12):
        optimizer.zero_grad()
        loss = model(torch.randn(16, 4)).pow(2).mean()
        loss.backward()
        optimizer.step()
""")


@pytest.mark.slow
def test_the_runner_imports_no_renderer_nor_other_command_for_a_json_report(write, tmp_path: Path) -> None:
    script = write("plain.py", "print('from the script')\n")
    code = (f"import json, sys, torchdoctor.cli\n"
            f"torchdoctor.cli.main(['run', '--format', 'json', '--fail-on', 'never', {str(script)!r}])\n"
            f"print(json.dumps([name for name in {NOT_FOR_A_JSON_REPORT!r} if name in sys.modules]))\n")
    done = children.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=environment(), timeout=120)
    assert done.stdout.splitlines()[0] == "from the script"
    assert json.loads(done.stdout.splitlines()[-1]) == []
    assert json.loads(done.stderr)["command"] == "run"  # the report was written all the same


@pytest.mark.slow
def test_the_observed_process_imports_no_process_table_reader(write, tmp_path: Path) -> None:
    # psutil is the runner's (stopping a job's process tree), never the observed process's own cost
    script = write("probe.py", "import sys\nimport torch\nprint('psutil' in sys.modules)\n")
    observed = torchdoctor_run(str(script), cwd=tmp_path)
    assert observed.stdout.splitlines()[-1] == "False"


@pytest.mark.slow
def test_profile_self_says_what_each_detector_cost_per_call_in_the_warm_up_and_after_it(write, tmp_path: Path) -> None:
    script = write("train.py", TRAINING)
    observed = torchdoctor_run(str(script), cwd=tmp_path, options=("--profile-self",))
    rows = observed.report["self_cost"]
    steps = {(row["owner"], row["hook"], row["phase"]): row["calls"] for row in rows}
    warmup = 3  # Session.WARMUP_STEPS
    assert steps[("NonFiniteLoss", "on_step", WARMUP)] == warmup and steps[("NonFiniteLoss", "on_step", STEADY)] == 12 - warmup
    assert steps[("session", "on_step", WARMUP)] + steps[("session", "on_step", STEADY)] == 12
    assert all(row["cpu_ms"] >= 0 and row["us_per_call"] >= 0 for row in rows)
    assert "profile-self: CPU time in torchdoctor's detectors and event handlers" in observed.stderr
    assert "NonFiniteLoss.on_step (after)" in observed.stderr


@pytest.mark.slow
def test_without_profile_self_nothing_is_timed(write, tmp_path: Path) -> None:
    observed = torchdoctor_run(str(write("train.py", TRAINING)), cwd=tmp_path)
    assert observed.report["meta"]["steps"] == 12
    assert "self_cost" not in observed.report and "profile-self" not in observed.stderr


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_times_are_exclusive_of_the_timed_calls_inside() -> None:
    phase = [WARMUP]
    cost = SelfCost(lambda: phase[0])

    def outer() -> None:
        _spin(0.01)
        cost.timed("Inner", "on_step", _spin, 0.03)

    cost.timed("session", "on_step", outer)
    phase[0] = STEADY
    cost.wrap("session", "on_step", outer)()
    rows = {(row["owner"], row["phase"]): row for row in cost.rows()}
    assert rows[("session", WARMUP)]["calls"] == rows[("Inner", STEADY)]["calls"] == 1
    assert 0.008e9 < rows[("session", WARMUP)]["ns"] < 0.025e9  # its own 10 ms, not the inner 30 ms
    assert rows[("Inner", WARMUP)]["ns"] >= 0.03e9


def test_merged_sums_the_processes_costliest_first_and_the_table_says_per_step() -> None:
    one = {"self_cost": [{"owner": "A", "hook": "on_step", "phase": STEADY, "calls": 10, "ns": 2_000_000},
                         {"owner": "B", "hook": "on_loss", "phase": WARMUP, "calls": 3, "ns": 9_000_000}]}
    two = {"self_cost": [{"owner": "A", "hook": "on_step", "phase": STEADY, "calls": 10, "ns": 8_000_000}, {"bad": 1}]}
    rows = merged([one, two, {}])
    assert [(row["owner"], row["calls"], row["cpu_ms"], row["us_per_call"]) for row in rows] == [("A", 20, 10.0, 500.0), ("B", 3, 9.0, 3000.0)]
    text = table(rows, steps=20)
    assert "19.0 ms over 20 optimizer steps" in text
    assert any(line.split()[:4] == ["A", "0.00", "10.00", "500.0"] for line in text.splitlines())
    assert table([], steps=0).startswith("profile-self: no observed process imported torch")
