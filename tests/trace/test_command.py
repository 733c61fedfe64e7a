"""`torchdoctor trace` end to end: the per-line table, the bounds of the trace, a crash inside
it, compiled code, the op paths, the Chrome trace, and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.core.test_locate import install_with_pip
from tests.run.conftest import environment
from tests.trace.conftest import SCRIPTS, line_of, torchdoctor_trace
from torchdoctor.renderers.json_ import schema


def validate_chrome(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON Trace Event Format as Perfetto and chrome://tracing read it: complete and
    metadata events with the fields they need, and complete events that nest on each track."""
    assert isinstance(data, dict) and isinstance(data["traceEvents"], list)
    complete = []
    for event in data["traceEvents"]:
        assert isinstance(event["name"], str) and event["ph"] in ("X", "M")
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int)
        if event["ph"] == "M":
            assert event["name"] in ("process_name", "thread_name") and isinstance(event["args"]["name"], str)
            continue
        assert isinstance(event["ts"], (int, float)) and isinstance(event["dur"], (int, float))
        assert event["ts"] >= 0 and event["dur"] >= 0 and isinstance(event.get("args", {}), dict)
        complete.append(event)
    tracks: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for event in complete:
        tracks.setdefault((event["pid"], event["tid"]), []).append(event)
    for events in tracks.values():
        open_ends: list[float] = []
        for event in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
            while open_ends and open_ends[-1] <= event["ts"] + 1e-3:  # (µs as floats: ends and starts within a ns meet)
                open_ends.pop()
            assert not open_ends or event["ts"] + event["dur"] <= open_ends[-1] + 1e-3, f"{event['name']} overlaps without nesting"
            open_ends.append(event["ts"] + event["dur"])
    return complete


@pytest.mark.slow
def test_lines_ops_backward_paths_and_chrome_trace(tmp_path: Path) -> None:
    chrome = tmp_path / "trace.json"
    ran = torchdoctor_trace("--skip", "3", "--steps", "4", "--line", "mlp.py:17", "--op", "aten::add_.Tensor",
                            "--chrome-trace", str(chrome), str(SCRIPTS / "mlp.py"), "12", cwd=SCRIPTS)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [f"step {i}" for i in range(12)]  # the script ran on after the trace
    report = ran.report
    assert report["command"] == "trace" and report["findings"] == []
    jsonschema.Draft202012Validator(schema()).validate(report)  # the contract's report, with its trace section
    section = report["trace"]
    assert section["traced"] == 4 and section["ended"] == "steps" and len(section["steps"]) == 4
    lines = section["lines"]
    assert [line["us"] for line in lines] == sorted((line["us"] for line in lines), reverse=True)
    model = line_of(report, "out = model(h)")
    assert (model["file"], model["line"]) == ("mlp.py", 17) and model["devices"] == ["cpu"]
    ops = {op["op"]: op for op in model["ops"]}
    assert ops["aten::addmm"]["count"] == 2 * 4 and "64x32" in ops["aten::addmm"]["shapes"][0]
    assert ops["aten::addmm"]["dtypes"] == ["float32"]
    assert ops["aten::linear"]["direct"] == 2 * 4 and ops["aten::linear"]["dispatch"][0]["kind"] == "math kernel"
    assert model["backward"]["nodes"]["AddmmBackward0"] == 2 * 4 and model["backward_us"] > 0
    # x.t() records the same autograd sequence number as the model's first op without making a
    # node: the backward is not its
    data = line_of(report, "x.t().contiguous().t()")
    assert data["backward_us"] == 0 and not data["backward"]["nodes"]
    assert sum(line["share"] for line in lines) == pytest.approx(1 - sum(r["us"] for r in section["remainder"]) / section["total_us"], abs=0.01)
    assert any("traced steps 4-7" in note for note in report["notices"])
    # --line: the path of every op the line called directly, served as observed
    paths = {path["op"]: path for path in report["op_paths"]}
    linear = paths["aten::linear"]
    assert linear["lines"] == ["mlp.py:17"] and linear["served"][0]["key"] == "AutogradCPU"
    assert linear["native_functions"]["line"] > 0
    step = paths["aten::add_.Tensor"]  # --op: the optimizer's in-place update, called from optimizer.step()
    assert step["lines"] == ["mlp.py:20"] and [s["key"] for s in step["served"]][-1] == "CPU"
    # torchdoctor's own torch calls (run's per-step series: norms of the gradients and updates,
    # the loss read) are its time, not the user's lines'
    assert not {op["op"] for line in lines for op in line["ops"]} & {"aten::_foreach_norm", "aten::linalg_vector_norm", "aten::item"}
    assert any(r["name"] == "torchdoctor (observing)" for r in section["remainder"])
    # the Chrome trace: valid, and annotated with the user lines
    events = validate_chrome(json.loads(chrome.read_text(encoding="utf-8")))
    assert any(e["cat"] == "user line" and e["name"] == "mlp.py:17" for e in events)
    assert any(e["args"].get("backward of") == "mlp.py:17" for e in events)
    assert sum(e["cat"] == "step" for e in events) == 4


@pytest.mark.slow
def test_a_library_on_pythonpath_is_not_a_line_of_yours(tmp_path: Path) -> None:
    """A package installed with `pip install --target` in a folder on PYTHONPATH, and one in a
    folder named site-packages: their ops belong to the user's line that called them."""
    install_with_pip(tmp_path / "libs", "jitterpkg")
    fake = tmp_path / "site-packages" / "fakeaug" / "__init__.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("import torch\n\n\ndef scale(x):\n    return torch.tanh(x) * 2\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(
        "import torch\nfrom torch import nn\nimport fakeaug\nimport jitterpkg\n"
        "model = nn.Linear(16, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(10):\n"
        "    x = fakeaug.scale(jitterpkg.jitter(torch.randn(4096, 16)))\n"
        "    loss = model(x).sum()\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n"
    )
    env = environment()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(tmp_path / "libs"), str(tmp_path / "site-packages")]))
    ran = torchdoctor_trace("--stop", "train.py", cwd=project, env=env)
    assert ran.returncode == 0, ran.stderr
    files = {line["file"] for line in ran.report["trace"]["lines"]}
    assert files == {"train.py"}, files
    called = line_of(ran.report, "fakeaug.scale(")
    assert called["location"] == "train.py:8"
    ops = {op["op"] for op in called["ops"]}  # the line's six costliest ops: which of the cheap ones make it varies
    assert "aten::tanh" in ops and ops & {"aten::randn_like", "aten::clamp", "aten::add"}, called["ops"]


@pytest.mark.slow
def test_stop_ends_the_script_after_the_traced_steps() -> None:
    ran = torchdoctor_trace("--skip", "2", "--steps", "3", "--stop", str(SCRIPTS / "mlp.py"), "12", cwd=SCRIPTS)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [f"step {i}" for i in range(4)]  # step 5's print never comes
    assert ran.report["trace"]["traced"] == 3
    assert any("stopped (--stop)" in note for note in ran.report["notices"])


@pytest.mark.slow
def test_a_crash_inside_the_traced_steps_keeps_the_trace_up_to_it() -> None:
    ran = torchdoctor_trace("--skip", "3", "--steps", "5", str(SCRIPTS / "crash_in_trace.py"), cwd=SCRIPTS)
    assert ran.returncode == 1
    assert [f["rule"] for f in ran.report["findings"]] == ["TD417"]
    jsonschema.Draft202012Validator(schema()).validate(ran.report)
    section = ran.report["trace"]
    assert section["ended"] == "crashed" and section["traced"] == 3
    assert line_of(ran.report, "out = model(")["ops"]
    assert any("crashed during the trace" in note for note in ran.report["notices"])


@pytest.mark.slow
def test_compiled_code_is_traced_as_the_compiled_call() -> None:
    ran = torchdoctor_trace("--skip", "3", "--steps", "3", str(SCRIPTS / "compiled.py"), cwd=SCRIPTS, timeout=400)
    plain = subprocess.run([sys.executable, str(SCRIPTS / "compiled.py")], capture_output=True, text=True, env=environment(), timeout=400)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == plain.stdout  # the same loss: the compiled graphs are those of the plain run
    compiled = line_of(ran.report, "compiled(x)")
    assert compiled["compiled"] and compiled["us"] > 0
    assert any("[compiled]" in note for note in ran.report["notices"])


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torchdoctor", "trace", *args], cwd=cwd, capture_output=True,
                          text=True, env=environment(), timeout=120)


def test_op_alone_prints_its_path(tmp_path: Path) -> None:
    ran = run_cli("--op", "aten::add.Tensor", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor" in ran.stdout
    assert "structured delegate: aten::add.out" in ran.stdout and "native_functions.yaml" in ran.stdout
    data = json.loads(run_cli("--op", "mm", "--format", "json", cwd=tmp_path).stdout)
    assert [path["op"] for path in data["op_paths"]] == ["aten::mm"] and data["findings"] == []
    jsonschema.Draft202012Validator(schema()).validate(data)


def test_bad_input_is_refused_before_anything_runs(tmp_path: Path) -> None:
    ran = run_cli("--op", "aten::ad.Tensor", cwd=tmp_path)
    assert ran.returncode == 2 and "did you mean aten::add.Tensor" in ran.stderr
    marker = tmp_path / "ran"
    script = tmp_path / "script.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    ran = run_cli("--op", "aten::nope", str(script), cwd=tmp_path)
    assert ran.returncode == 2 and not marker.exists()
    assert run_cli("--line", "script.py:3", cwd=tmp_path).returncode == 2  # --line needs a script
    ran = run_cli("--line", "script.py", str(script), cwd=tmp_path)
    assert ran.returncode == 2 and "FILE:LINE" in ran.stderr and not marker.exists()
    assert run_cli("--steps", "0", str(script), cwd=tmp_path).returncode == 2
    assert run_cli(str(tmp_path / "missing.py"), cwd=tmp_path).returncode == 2


@pytest.mark.slow
def test_a_script_that_ends_before_the_trace_starts_is_told_so() -> None:
    ran = torchdoctor_trace("--skip", "3", str(SCRIPTS / "mlp.py"), "3", cwd=SCRIPTS)
    assert ran.returncode == 0 and "trace" not in ran.report
    assert any("nothing was traced: the script made 3 optimizer step(s)" in note for note in ran.report["notices"])


@pytest.mark.slow
def test_workers_forked_during_the_trace() -> None:
    """Each epoch forks new DataLoader workers inside the traced steps: the trace is the training
    process's, the wait for the workers is the `for` line's, and it is not judged (it depends on
    how busy the machine is)."""
    ran = torchdoctor_trace("--skip", "2", "--steps", "8", str(SCRIPTS / "workers.py"), cwd=SCRIPTS)
    assert ran.returncode == 0 and ran.stdout == "done\n", ran.stderr
    section = ran.report["trace"]
    assert section["traced"] == 8 and section["ended"] == "steps"
    loop = line_of(ran.report, "for x, y in loader:")
    assert loop["us"] > 0 and "workers.py:14" in section["data_lines"]
    assert "TD314" not in {f["rule"] for f in ran.report["findings"]}
