"""The command line: sub-commands, exit statuses, --output, and the rules catalogue."""

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import children
from torchdoctor import cli
from torchdoctor.core import registry
from torchdoctor.core.config import Config
from torchdoctor.core.finding import Category, Finding, Severity
from torchdoctor.core.report import ExitStatus, FailOn, Report
from torchdoctor.renderers.outputs import Output


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return children.run([sys.executable, "-m", "torchdoctor", *args], capture_output=True, text=True, cwd=cwd)


def test_python_dash_m_and_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == "torchdoctor 0.1.0"


def test_rules_lists_every_rule_and_filters_by_category(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["rules"]) == 0
    out = capsys.readouterr().out
    assert all(rule.code in out for rule in registry.all_rules())
    assert cli.main(["rules", "--category", "loss", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed and {r["category"] for r in listed} == {"loss"}


def test_rules_text_says_which_command_reports_each_rule(capsys: pytest.CaptureFixture[str]) -> None:
    from torchdoctor.catalog.reporters import commands_of

    assert cli.main(["rules"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.startswith("TD")}
    for rule in registry.all_rules():
        assert f" {', '.join(commands_of(rule.code))} " in lines[rule.code], lines[rule.code]
    assert " lint " in lines["TD000"] and " run " in lines["TD001"] and " dist " in lines["TD718"]


@pytest.mark.parametrize("command", ["lint", "check", "rules", "trace"])
def test_an_unknown_option_gets_the_subcommands_usage(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main([command, "--no-such-option", "x"] if command != "rules" else [command, "--no-such-option"])
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err.startswith(f"usage: torchdoctor {command} ") and f"torchdoctor {command}: error: unrecognized arguments: --no-such-option" in err


def test_rule_prints_the_doc(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["rule", "td101"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# softmax-before-cross-entropy (TD101)")
    assert "## Why is this bad?" in out and "Use instead:" in out


def test_usage_errors_exit_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["rule", "TD999"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("torchdoctor: error: no rule 'TD999'")
    assert cli.main(["rules", "--category", "nope"]) == 2


def test_argparse_errors_exit_2() -> None:
    result = run_cli("rules", "--format", "yaml")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def _args(tmp_path: Path, **overrides: object) -> argparse.Namespace:
    values = {"format": "json", "outputs": [Output(tmp_path / "report.json", "json")], "color": False}
    values.update(overrides)
    return argparse.Namespace(**values)


def test_finish_exit_status_follows_fail_on(tmp_path: Path) -> None:
    def report() -> Report:
        r = Report(command="check")
        r.add(registry.get("TD146").finding(fields={"what": "x", "other": "y", "consequence": "z"}))
        return r

    assert cli.finish(report(), _args(tmp_path), Config(), io.StringIO()) == 0
    assert cli.finish(report(), _args(tmp_path), Config(fail_on="warning"), io.StringIO()) == 1
    assert cli.finish(report(), _args(tmp_path), Config(fail_on="never"), io.StringIO()) == 0
    written = json.loads((tmp_path / "report.json").read_text())
    assert written["schema"] == "torchdoctor.report/1" and written["findings"][0]["rule"] == "TD146"


def test_finish_passes_the_commands_own_exit_status_when_clean(tmp_path: Path) -> None:
    report = Report(command="run", exit_status=3)
    assert cli.finish(report, _args(tmp_path), Config(), io.StringIO()) == 3
    report.fatal_rules = frozenset({"TD006"})
    report.add(Finding(rule="TD006", name="run-internal-error", category=Category.API, severity=Severity.INFO,
                       message="torchdoctor failed", hint=""))
    assert cli.finish(report, _args(tmp_path), Config(fail_on="never"), io.StringIO()) == 2


def test_exit_statuses_and_fail_on_are_the_contracts() -> None:
    assert [int(s) for s in ExitStatus] == [0, 1, 2, 130]
    assert [f.value for f in FailOn] == ["error", "warning", "info", "never"]
    assert FailOn.WARNING.reached_by(Severity.ERROR) and not FailOn.WARNING.reached_by(Severity.INFO)
    assert not any(FailOn.NEVER.reached_by(s) for s in Severity)


def test_a_bad_output_path_is_refused_before_the_command_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing folder, a file where a folder should be, a folder as the file: exit 2, one line,
    nothing created and nothing linted (the lint target does not even exist)."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    for output, said in ((tmp_path / "missing" / "r.json", "does not exist (create it first)"),
                         (blocker / "r.json", "is not a folder"), (tmp_path, "it is a folder")):
        assert cli.main(["lint", str(tmp_path / "nowhere.py"), "--output", str(output)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"torchdoctor: error: cannot write --output {str(output)!r}") and said in err, err
        assert err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_output_formats_follow_the_suffix_and_unknown_suffixes_stay_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "bad.py"
    source.write_text("import torch.nn.functional as F\n\ndef f(m, x, y):\n    return F.cross_entropy(F.softmax(m(x), dim=1), y)\n")
    names = ("r.json", "r.html", "r.sarif", "r.xml", "r.txt", "r.report")
    outputs = [arg for name in names for arg in ("--output", str(tmp_path / name))]
    assert cli.main(["lint", str(source), "--format", "github", *outputs]) == 1
    out = capsys.readouterr().out
    assert out.startswith("::error ")  # --format still decides what is printed
    read = {name: (tmp_path / name).read_text(encoding="utf-8") for name in names}
    assert json.loads(read["r.json"])["findings"][0]["rule"] == "TD101"
    assert read["r.html"].lstrip().lower().startswith("<!doctype html")
    assert json.loads(read["r.sarif"])["runs"][0]["results"][0]["ruleId"] == "TD101"
    assert read["r.xml"].startswith("<?xml") and "<testsuite" in read["r.xml"]
    assert "TD101 [error]" in read["r.txt"] and "\x1b[" not in read["r.txt"]
    assert json.loads(read["r.report"])["schema"] == "torchdoctor.report/1"  # the contract: JSON whatever --format says
    assert cli.main(["lint", str(source), "--output", str(tmp_path / "as-sarif.out"), "--output-format", "sarif"]) == 1
    assert json.loads((tmp_path / "as-sarif.out").read_text())["version"] == "2.1.0"


def test_output_format_needs_an_output_and_one_file_is_written_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "ok.py"
    source.write_text("x = 1\n")
    assert cli.main(["lint", str(source), "--output-format", "html"]) == 2
    assert "--output-format needs an --output FILE" in capsys.readouterr().err
    same = str(tmp_path / "r.json")
    assert cli.main(["lint", str(source), "--output", same, "--output", same]) == 2
    assert "is given twice" in capsys.readouterr().err


def test_commands_that_need_torch_say_so_without_it(tmp_path: Path) -> None:
    """Without torch (a lint-only install) lint still works and check says what to install."""
    target = tmp_path / "train.py"
    target.write_text("import torch\n\ndef make():\n    return {}\n", encoding="utf-8")
    hide_torch = (  # an interpreter where `import torch` fails as it does when torch is not installed
        "import sys\n"
        "class NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] == 'torch':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, NoTorch())\n"
        "from torchdoctor.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    checked = children.run([sys.executable, "-c", hide_torch, "check", f"{target}:make"], capture_output=True, text=True)
    assert checked.returncode == 2
    assert checked.stderr.startswith("torchdoctor: error: `torchdoctor check` needs PyTorch")
    assert len(checked.stderr.strip().splitlines()) == 1
    linted = children.run([sys.executable, "-c", hide_torch, "lint", str(target)], capture_output=True, text=True)
    assert linted.returncode == 0, linted.stderr


def test_html_writes_the_page_whatever_the_suffix_and_is_checked_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "bad.py"
    source.write_text("import torch.nn.functional as F\n\ndef f(m, x, y):\n    return F.cross_entropy(F.softmax(m(x), dim=1), y)\n")
    page, data = tmp_path / "page.report", tmp_path / "r.json"
    assert cli.main(["lint", str(source), "--html", str(page), "--output", str(data), "--output-format", "json"]) == 1
    assert page.read_text(encoding="utf-8").startswith("<!doctype html>") and "TD101" in page.read_text(encoding="utf-8")
    assert json.loads(data.read_text(encoding="utf-8"))["findings"][0]["rule"] == "TD101"
    capsys.readouterr()
    assert cli.main(["lint", str(source), "--html", str(tmp_path / "missing" / "r.html")]) == 2
    assert "cannot write --html" in capsys.readouterr().err
    assert cli.main(["lint", str(source), "--html", str(data), "--output", str(data)]) == 2
    assert f"--html {str(data)!r} is given twice" in capsys.readouterr().err
