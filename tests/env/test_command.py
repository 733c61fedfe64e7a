"""`torchdoctor env` end to end: real probes on this machine, every format, exit statuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import children
from torchdoctor import cli
from torchdoctor.renderers import FORMATS

SECRETS = {
    "TORCH_HUB_TOKEN": "tok-AAAA-1111-secret",
    "NCCL_PASSWORD": "pw-BBBB-2222-secret",
    "CUDA_CACHE_URL": "https://bob:hunter2-CCCC-secret@cache.example.com/x",
    "PYTORCH_HINT": "hf_DDDDDDDDDDDDDDDDDDDDDDDDsecret",
}
LEAKS = ("tok-AAAA-1111-secret", "pw-BBBB-2222-secret", "hunter2-CCCC-secret", "hf_DDDDDDDDDDDDDDDDDDDDDDDDsecret")


def run_env(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return children.run([sys.executable, "-m", "torchdoctor", "env", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


@pytest.fixture(scope="module")
def json_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    output = tmp_path_factory.mktemp("env") / "report.json"
    return run_env("--format", "json", "--output", str(output), env=SECRETS), output


@pytest.mark.slow
def test_json_report_has_the_contract_fields_and_the_facts(json_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    done, output = json_run
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["schema"] == "torchdoctor.report/1" and report["command"] == "env"
    assert {c["name"] for c in report["checks"]} == {"platform", "torch", "packages", "gpu", "libraries", "build", "limits", "variables"}
    environment = report["environment"]
    import torch

    assert environment["torch"]["version"] == torch.__version__
    assert environment["variables"]["TORCH_HUB_TOKEN"] == "***"
    assert environment["variables"]["CUDA_CACHE_URL"] == "https://bob:***@cache.example.com/x"
    assert json.loads(output.read_text()) == report
    assert any("no NVIDIA GPU" in note for note in report["notices"])


@pytest.mark.slow
def test_secrets_never_reach_any_format(json_run: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    done, output = json_run
    assert not any(leak in done.stdout + done.stderr + output.read_text() for leak in LEAKS)
    facts = json.loads(done.stdout)["environment"]
    # Re-render the same facts (with a finding that quotes a variable) in every format.
    facts["variables"]["CUDA_LAUNCH_BLOCKING"] = "1"
    facts_file = tmp_path / "facts.json"
    facts_file.write_text(json.dumps(facts))
    for fmt in FORMATS:
        out = tmp_path / f"{fmt}.json"
        status = cli.main(["env", "--facts", str(facts_file), "--format", fmt, "--output", str(out), "--fail-on", "never"])
        printed = capsys.readouterr()
        assert status == 0
        assert "TD617" in printed.out or fmt == "junit" and "CUDA_LAUNCH_BLOCKING" in printed.out
        assert not any(leak in printed.out + printed.err + out.read_text() for leak in LEAKS), fmt


@pytest.mark.slow
def test_text_report_shows_facts_and_checks() -> None:
    done = run_env("--no-color")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "torchdoctor env"
    assert any(line.startswith("✅  2. PyTorch: torch ") for line in lines)
    assert any("GPU & driver: no NVIDIA GPU" in line for line in lines)
    assert lines[-1].startswith("torchdoctor env: 0 errors")


def test_facts_from_another_machine_are_judged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    facts = {"torch": {"importable": True, "version": "2.5.1+cpu"},
             "nvidia": {"driver": "550.54.15", "driver_cuda": "12.4", "gpus": [{"index": 0, "name": "NVIDIA L4", "capability": "8.9"}]},
             "limits": {"shm_bytes": 67108864}, "variables": {"HF_TOKEN": "hf_plainvalue"}}
    path = tmp_path / "facts.json"
    path.write_text(json.dumps({"schema": "torchdoctor.report/1", "environment": facts}))
    assert cli.main(["env", "--facts", str(path), "--format", "json", "--fail-on", "warning"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert sorted(f["rule"] for f in report["findings"]) == ["TD601", "TD613"]
    assert all(f["file"] is None and f["line"] is None for f in report["findings"])
    assert report["environment"]["variables"]["HF_TOKEN"] == "***"
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert statuses["gpu"] == "warned" and statuses["limits"] == "warned" and statuses["torch"] == "passed"


def test_exit_1_on_an_error_and_2_on_bad_facts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps({"torch": {"importable": False, "import_error": "ImportError: libc10.so: cannot open shared object file"}}))
    assert cli.main(["env", "--facts", str(path)]) == 1
    assert "TD600 [error] `import torch` fails: ImportError: libc10.so" in capsys.readouterr().out
    path.write_text(json.dumps({"torch": {"imported": True}}))
    assert cli.main(["env", "--facts", str(path)]) == 2
    assert "unknown field(s) imported" in capsys.readouterr().err
    assert cli.main(["env", "--facts", str(tmp_path / "missing.json")]) == 2
