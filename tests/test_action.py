"""The GitHub Action (action.yml at the root): its steps' command lines, run here as a runner would."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="pyyaml reads action.yml (pip install -e '.[test]')")

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
BUGGY = "import torch.nn.functional as F\n\n\ndef loss(x, y):\n    return F.cross_entropy(F.softmax(x, dim=1), y)\n"


def step(name: str) -> dict:
    return next(s for s in ACTION["runs"]["steps"] if s["name"] == name)


def run_step(name: str, cwd: Path, **inputs: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Run one composite step's script with bash, as the runner would: inputs through its `env`,
    `GITHUB_OUTPUT` a file, `python3` the interpreter of this test run."""
    defaults = {key: str(spec.get("default", "")) for key, spec in ACTION["inputs"].items()}
    values = {**defaults, **inputs}
    env = dict(os.environ, GITHUB_OUTPUT=str(cwd / "github_output"), GITHUB_ACTION_PATH=str(ROOT))
    for key, expression in (step(name).get("env") or {}).items():
        env[key] = values[re.fullmatch(r"\$\{\{ inputs\.([\w-]+) \}\}", expression).group(1)]
    (cwd / "bin").mkdir(exist_ok=True)
    python3 = cwd / "bin" / "python3"  # this test run's interpreter (a link would lose its virtual environment)
    python3.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    python3.chmod(0o755)
    env["PATH"] = f"{cwd / 'bin'}{os.pathsep}{env['PATH']}"
    (cwd / "github_output").write_text("", encoding="utf-8")
    result = subprocess.run(["bash", "-e", "-c", step(name)["run"]], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    outputs = dict(line.split("=", 1) for line in (cwd / "github_output").read_text(encoding="utf-8").splitlines())
    return result, outputs


def test_findings_become_annotations_and_sarif_and_fail_the_job(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BUGGY, encoding="utf-8")
    result, outputs = run_step("torchdoctor lint", tmp_path)
    assert result.returncode == 0, result.stderr  # the upload step still runs
    assert outputs == {"exit-code": "1"}  # ... and the last step fails the job
    assert step("Fail on findings")["if"] == "${{ steps.lint.outputs.exit-code == '1' }}"
    assert result.stdout.startswith("::error file=train.py,line=5,col=28,title=TD101 softmax-before-cross-entropy::")
    sarif = json.loads((tmp_path / "torchdoctor.sarif").read_text(encoding="utf-8"))
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["TD101"]
    assert "upload-sarif" in step("Upload SARIF to code scanning")["uses"]


def test_inputs_reach_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(BUGGY, encoding="utf-8")
    (tmp_path / "other.py").write_text(BUGGY, encoding="utf-8")
    result, outputs = run_step("torchdoctor lint", tmp_path, paths="src", args="--ignore loss", **{"sarif-file": "out.sarif"})
    assert outputs == {"exit-code": "0"} and result.stdout.startswith("::notice title=torchdoctor lint::no findings in 1 file")
    assert json.loads((tmp_path / "out.sarif").read_text(encoding="utf-8"))["runs"][0]["results"] == []
    _, outputs = run_step("torchdoctor lint", tmp_path, **{"fail-on": "never"})
    assert outputs == {"exit-code": "0"}


def test_torchdoctor_failing_to_lint_fails_the_step_at_once(tmp_path: Path) -> None:
    result, outputs = run_step("torchdoctor lint", tmp_path, paths="missing/")
    assert result.returncode == 2 and outputs == {"exit-code": "2"} and "no such file or folder" in result.stderr


def test_the_install_step_brings_every_dependency_but_torch() -> None:
    """lint needs no PyTorch (a CUDA wheel would cost the job gigabytes); the rest must match pyproject."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    installed = re.findall(r'"([^"]+)"', step("Install torchdoctor (without PyTorch, which lint never imports)")["run"])
    assert sorted(installed[1:]) == sorted(d for d in declared if not d.startswith("torch"))
    assert "--no-deps" in step("Install torchdoctor (without PyTorch, which lint never imports)")["run"]
