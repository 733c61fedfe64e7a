"""The JSON report of every command follows `torchdoctor.report/1`'s JSON Schema, which ships
in the package (renderers/report.schema.json) for anyone who consumes the report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.lab import LAB
from torchdoctor.cli import main
from torchdoctor.core.report import Report
from torchdoctor.renderers.json_ import dumps, schema

FIXTURES = Path(__file__).resolve().parents[1] / "lint" / "fixtures"


def validate(data: object) -> None:
    jsonschema.Draft202012Validator(schema()).validate(data)


def written(tmp_path: Path, *argv: str) -> dict[str, object]:
    output = tmp_path / "report.json"
    main([*argv, "--output", str(output)])
    return json.loads(output.read_text(encoding="utf-8"))


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(schema())
    assert schema()["properties"]["schema"]["const"] == "torchdoctor.report/1"


def test_a_report_with_every_kind_of_field_is_valid(report: Report) -> None:
    validate(json.loads(dumps(report)))


def test_lint_check_and_env_reports_are_valid(tmp_path: Path) -> None:
    linted = written(tmp_path, "lint", str(FIXTURES))
    assert linted["findings"]  # fixtures are full of findings, with fixes among them
    assert any("fix" in f for f in linted["findings"])  # type: ignore[union-attr]
    validate(linted)
    checked = written(tmp_path, "check", f"{LAB / '01_softmax_before_cross_entropy.py'}:make")
    assert checked["checks"]
    validate(checked)
    validate(written(tmp_path, "env"))


@pytest.mark.parametrize("broken", [
    {"schema": "torchdoctor.report/2"},
    {"findings": [{"rule": "TD101", "name": "softmax-before-cross-entropy"}]},
    {"findings": [{"rule": "TD101", "name": "x", "category": "loss", "severity": "fatal", "message": "m", "hint": "h", "file": None, "line": None}]},
    {"summary": {"error": 0, "warning": 0}},
], ids=["schema", "missing-fields", "severity", "summary"])
def test_what_breaks_the_contract_is_invalid(report: Report, broken: dict[str, object]) -> None:
    data = {**json.loads(dumps(report)), **broken}
    with pytest.raises(jsonschema.ValidationError):
        validate(data)


@pytest.mark.slow
def test_a_run_report_is_valid(tmp_path: Path) -> None:
    output = tmp_path / "report.json"
    subprocess.run([sys.executable, "-m", "torchdoctor", "run", "--output", str(output), str(LAB / "01_softmax_before_cross_entropy.py")],
                   capture_output=True, text=True, timeout=300, cwd=tmp_path)
    data = json.loads(output.read_text(encoding="utf-8"))
    assert data["findings"]
    validate(data)


def test_the_schema_ships_with_the_package() -> None:
    from importlib import resources

    assert resources.files("torchdoctor.renderers").joinpath("report.schema.json").is_file()
    assert resources.files("torchdoctor").joinpath("py.typed").is_file()


SARIF_SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-2.1.0-rtm.5.json"


@pytest.mark.parametrize("paths", [[str(FIXTURES)], []], ids=["findings", "no-findings"])
def test_sarif_follows_the_official_2_1_0_schema(tmp_path: Path, paths: list[str]) -> None:
    target = paths or [str(tmp_path / "empty")]
    if not paths:
        (tmp_path / "empty").mkdir()
        (tmp_path / "empty" / "ok.py").write_text("x = 1\n", encoding="utf-8")
    output = tmp_path / "report.sarif"
    main(["lint", *target, "--output", str(output)])
    sarif = json.loads(output.read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0"
    assert bool(sarif["runs"][0]["results"]) == bool(paths)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))).validate(sarif)


def test_the_series_of_a_watched_run_are_valid_and_a_broken_table_is_not() -> None:
    import torch
    from torch import nn

    import torchdoctor

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with torchdoctor.watch() as watched:
        for _ in range(4):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(torch.randn(16, 8)), torch.randint(0, 2, (16,))).backward()
            optimizer.step()
    data = json.loads(dumps(watched.report))
    assert {"loss", "lr", "grad_norm", "step_time"} <= set(data["series"])
    validate(data)
    for broken in ({"kind": "pie"}, {"values": [["1.0"]]}, {"steps": None}):
        table = {**data["series"]["loss"], **broken}
        with pytest.raises(jsonschema.ValidationError):
            validate({**data, "series": {**data["series"], "loss": table}})
