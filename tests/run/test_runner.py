"""`torchdoctor run` runs the script exactly as `python` would, and always writes its report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import children
from tests.run.conftest import SCRIPTS, environment, python, torchdoctor_run


def probe(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [("probe.py", "3", "b c"), ("probe.py", "--epochs", "1", "-m", "x"), ("-m", "probe", "0", "x"), ("-m", "probe_pkg", "4")],
    ids=["script", "script-with-options", "module", "package"],
)
def test_runs_exactly_like_python(args: tuple[str, ...]) -> None:
    plain = python(*args, cwd=SCRIPTS)
    observed = torchdoctor_run(*args, cwd=SCRIPTS)
    assert probe(observed.stdout) == probe(plain.stdout)
    assert observed.returncode == plain.returncode
    assert observed.report["meta"]["exit_status"] == plain.returncode


@pytest.mark.slow
def test_script_path_from_another_folder(tmp_path: Path) -> None:
    plain = python(str(SCRIPTS / "probe.py"), "a", cwd=tmp_path)
    observed = torchdoctor_run(str(SCRIPTS / "probe.py"), "a", cwd=tmp_path)
    assert probe(observed.stdout) == probe(plain.stdout)


@pytest.mark.slow
def test_report_goes_to_stderr_and_json_to_output(write, tmp_path: Path) -> None:
    script = write("loud.py", "print('from the script')\n")
    result = children.run(
        [sys.executable, "-m", "torchdoctor", "run", "--format", "json", "--output", "r.json", str(script)],
        cwd=tmp_path, capture_output=True, text=True, env=environment(),
    )
    assert result.stdout == "from the script\n"
    assert json.loads(result.stderr)["command"] == "run"
    assert json.loads((tmp_path / "r.json").read_text())["meta"]["exit_status"] == 0


@pytest.mark.slow
def test_reports_in_any_format_go_to_their_own_files_apart_from_the_scripts_stderr(write, tmp_path: Path) -> None:
    # the page shows the source lines around the crash and the rule's doc: the script's output
    # ("to stderr", its traceback) must not be there, its source may
    script = write("noisy.py", "import sys\nimport torch\nprint('to stdout')\nprint('to', 'stderr', file=sys.stderr)\n"
                               "raise KeyError('head')\n")
    result = children.run(
        [sys.executable, "-m", "torchdoctor", "run", "--output", "r.html", "--output", "r.json", "--output", "r.xml", str(script)],
        cwd=tmp_path, capture_output=True, text=True, env=environment(),
    )
    assert result.returncode == 1 and result.stdout == "to stdout\n"
    assert "to stderr" in result.stderr and "Traceback" in result.stderr and "TD001" in result.stderr  # the text report
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html") and "Traceback (most recent call last)" not in html
    assert "to stderr" not in html and "noisy.py" in html
    assert json.loads((tmp_path / "r.json").read_text())["findings"][0]["rule"] == "TD001"
    assert (tmp_path / "r.xml").read_text().startswith("<?xml")


def test_a_bad_output_path_stops_run_before_the_script_starts(write, tmp_path: Path) -> None:
    script = write("side_effect.py", "open('ran.txt', 'w').write('ran')\n")
    result = children.run(
        [sys.executable, "-m", "torchdoctor", "run", "--output", "missing/r.json", str(script)],
        cwd=tmp_path, capture_output=True, text=True, env=environment(),
    )
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "cannot write --output 'missing/r.json'" in result.stderr and "does not exist" in result.stderr
    assert not (tmp_path / "ran.txt").exists() and not (tmp_path / "missing").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (("missing.py",), "no file to run: 'missing.py'"),
        (("-m", "no_such_module_xyz"), "no module named 'no_such_module_xyz'"),
        ((), "nothing to run"),
        (("-m",), "-m needs a module name"),
    ],
)
def test_bad_targets_exit_2_with_one_line(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    result = children.run([sys.executable, "-m", "torchdoctor", "run", *args], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr


def test_syntax_error_in_the_script_exits_2(write, tmp_path: Path) -> None:
    script = write("broken.py", "x = 1\ndef f(:\n    pass\n")
    result = children.run([sys.executable, "-m", "torchdoctor", "run", str(script)], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 2
    assert "invalid syntax at line 2" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "content, said",
    [
        (b"x = 1\ny = 2\0\n", "line 2 contains a NUL byte (a binary file, not Python source)"),
        (b"x = 1\ns = '\xff'\n", "line 2 is not UTF-8 (byte 0xff) and the file declares no other encoding"),
        (b"# -*- coding: ascii -*-\ns = '\xe9'\n", "line 2 is not ascii (byte 0xe9), the encoding the file declares"),
        (b"# -*- coding: klingon -*-\nx = 1\n", "line 1 declares an unknown encoding 'klingon'"),
    ],
    ids=["nul", "not-utf8", "not-declared-encoding", "unknown-encoding"],
)
def test_unreadable_source_is_named_by_line_never_none(content: bytes, said: str, tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_bytes(content)
    result = children.run([sys.executable, "-m", "torchdoctor", "run", "bad.py"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"torchdoctor: error: cannot run bad.py: {said}"), result.stderr
    assert "None" not in result.stderr


@pytest.mark.slow
def test_crash_is_an_error_finding_at_the_users_line(write, tmp_path: Path) -> None:
    script = write("crash.py", "import torch\n\ndef load(table):\n    return table['head']\n\nload({'fc': torch.ones(1)})\n")
    ran = torchdoctor_run(str(script), cwd=tmp_path)
    assert ran.returncode == 1
    crash = ran.finding("TD001")
    assert (crash["file"], crash["line"], crash["severity"]) == ("crash.py", 4, "error")
    assert "KeyError: 'head'" in crash["message"]
    assert "Traceback" in ran.stderr  # Python's own traceback is still printed


@pytest.mark.slow
def test_script_exit_status_is_kept_and_fail_on_never(write, tmp_path: Path) -> None:
    script = write("exits.py", "import sys\nimport torch\nsys.exit(7)\n")
    ran = torchdoctor_run(str(script), cwd=tmp_path)
    assert ran.returncode == 7 and ran.report["meta"]["exit_status"] == 7
    crash = write("crash2.py", "raise SystemError('x')\n")
    assert torchdoctor_run(str(crash), cwd=tmp_path, options=("--fail-on", "never")).returncode == 1


@pytest.mark.slow
def test_no_training_and_no_torch_are_said(write, tmp_path: Path) -> None:
    ran = torchdoctor_run(str(write("plain.py", "print(1)\n")), cwd=tmp_path)
    assert ran.returncode == 0 and any("never imported torch" in n for n in ran.report["notices"])
    ran = torchdoctor_run(str(write("infer.py", "import torch\nprint(torch.nn.Linear(2, 1)(torch.ones(1, 2)))\n")), cwd=tmp_path)
    assert any("no training was observed" in n for n in ran.report["notices"])


@pytest.mark.slow
def test_an_abrupt_exit_says_what_is_known_and_what_was_lost(write, tmp_path: Path) -> None:
    """os._exit skips the exit handlers that write a process's summary: the report keeps what was
    written before (the finding, torch imported, steps counted at 1, 2, 4, 8, 16...) and says what
    was lost, in words; it never claims torch was not imported."""
    script = write("abrupt.py", (
        "import os\nimport torch\nfrom torch import nn\n"
        "model = nn.Sequential(nn.Linear(4, 8), nn.Softmax(dim=1))\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "x, y = torch.randn(16, 4), torch.randint(0, 8, (16,))\n"
        "for _ in range(20):\n"
        "    opt.zero_grad()\n"
        "    nn.functional.cross_entropy(model(x), y).backward()\n"
        "    opt.step()\n"
        "os._exit(5)\n"))
    ran = torchdoctor_run(str(script), cwd=tmp_path)
    meta = ran.report["meta"]
    assert ran.codes == {"TD101"} and meta["exit_status"] == 5
    (main,) = meta["processes"]
    assert (main["role"], main["torch"], main["summary"], main["stats"]["steps"]) == ("main", True, "lost", 16)
    assert meta["steps"] == 16 and "at least 16 optimizer steps" in meta["title"]
    notices = " | ".join(ran.report["notices"])
    assert "never imported torch" not in notices and "no training was observed" not in notices
    assert f"pid {main['pid']} (the script) ended without running its exit handlers" in notices
    assert "at least 16 optimizer steps" in notices and "end-of-run checks did not run" in notices
    assert "None" not in ran.stderr

    early = torchdoctor_run(str(write("early.py", "import os\nimport torch\nos._exit(0)\n")), cwd=tmp_path)
    notices = " | ".join(early.report["notices"])
    assert "never imported torch" not in notices and "ended without running its exit handlers" in notices
    assert "no optimizer step" in notices and early.report["meta"]["steps"] == 0


@pytest.mark.slow
def test_the_header_says_the_scripts_status_and_torchdoctors(write, tmp_path: Path) -> None:
    """A script that exits 0 with an error finding: the header must not read as if torchdoctor exits 0."""
    script = write("probs.py", (
        "import torch\nfrom torch import nn\n"
        "model = nn.Sequential(nn.Linear(4, 8), nn.Softmax(dim=1))\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "x, y = torch.randn(16, 4), torch.randint(0, 8, (16,))\n"
        "for _ in range(3):\n"
        "    opt.zero_grad()\n"
        "    nn.functional.cross_entropy(model(x), y).backward()\n"
        "    opt.step()\n"))
    ran = torchdoctor_run(str(script), cwd=tmp_path)
    header = next(line for line in ran.stderr.splitlines() if line.startswith("torchdoctor run "))
    assert ran.returncode == 1 and ran.codes == {"TD101"}
    assert " · script exited 0 · torchdoctor exits 1 (1 error) · 3 optimizer steps · " in header, header
    assert (ran.report["meta"]["exit_status"], ran.report["meta"]["torchdoctor_exit_status"]) == (0, 1)
    lenient = torchdoctor_run(str(script), cwd=tmp_path, options=("--fail-on", "never"))
    assert lenient.returncode == 0 and " · script exited 0 · torchdoctor exits 0 · " in lenient.stderr, lenient.stderr


@pytest.mark.slow
def test_dataloader_workers_stopped_at_exit_lose_nothing_worth_a_note(write, tmp_path: Path) -> None:
    """Spawned persistent workers are stopped with SIGTERM when the script ends, by design: they
    are listed as ended without their summary, but the report says nothing about them."""
    script = write("spawned.py", (
        "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader, TensorDataset\n"
        "if __name__ == '__main__':\n"
        "    data = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))\n"
        "    model = nn.Linear(4, 2)\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    loader = DataLoader(data, batch_size=8, num_workers=2, multiprocessing_context='spawn', persistent_workers=True)\n"
        "    for x, y in loader:\n"
        "        opt.zero_grad()\n"
        "        nn.functional.cross_entropy(model(x), y).backward()\n"
        "        opt.step()\n"))
    ran = torchdoctor_run(str(script), cwd=tmp_path)
    meta = ran.report["meta"]
    assert meta["exit_status"] == 0 and ran.report.get("notices", []) == [], ran.report.get("notices")
    assert meta["steps"] == 4 and meta["title"].endswith(" · 4 optimizer steps · " + meta["title"].rsplit(" · ", 1)[1])


@pytest.mark.slow
def test_killed_by_a_signal_still_gets_a_report(write, tmp_path: Path) -> None:
    script = write("segv.py", "import os, signal\nimport torch\nos.kill(os.getpid(), signal.SIGKILL)\n")
    ran = torchdoctor_run(str(script), cwd=tmp_path)
    assert ran.returncode == 1
    killed = ran.finding("TD002")
    assert "SIGKILL" in killed["message"] and "out-of-memory" in killed["message"]
    assert ran.report["meta"]["exit_status"] == 128 + signal.SIGKILL


@pytest.mark.slow
def test_ctrl_c_gets_a_report_with_what_was_found(write, tmp_path: Path) -> None:
    script = write(
        "forever.py",
        "import time\nimport torch\nfrom torch import nn\n"
        "model = nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.01)\n"
        "for step in range(10**9):\n"
        "    loss = model(torch.randn(8, 4)).pow(2).mean()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    if step == 5:\n"
        "        print('ready', flush=True)\n"
        "    time.sleep(0.01)\n",
    )
    output = tmp_path / "r.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "torchdoctor", "run", "--output", str(output), str(script)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment(), start_new_session=True,
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 120
    while "ready" not in process.stdout.readline() and time.monotonic() < deadline:
        pass
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole group
    rest, errors = process.communicate(timeout=180)  # generous: a loaded machine, not a hang
    children.remember(process.args, process.returncode, rest, errors)
    report = json.loads(output.read_text())
    assert report["meta"]["exit_status"] == 130  # the script's own status: killed by SIGINT
    assert process.returncode == 1  # the findings reach --fail-on error
    assert {f["rule"] for f in report["findings"]} == {"TD110"}
    assert any("interrupted" in n for n in report["notices"])
