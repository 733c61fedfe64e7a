"""`torchdoctor lint` end to end: exit statuses, formats, suppressions, selection, fixes, robustness."""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

import pytest

from tests import children
from torchdoctor import cli

BAD = """import torch.nn.functional as F


def step(model, x, y):
    probs = F.softmax(model(x), dim=1)
    return F.cross_entropy(probs, y)
"""
WARNING_ONLY = """import torch.nn.functional as F


def predict(model, x):
    return F.softmax(model(x))
"""
CLEAN = """import torch.nn.functional as F


def step(model, x, y):
    return F.cross_entropy(model(x), y)
"""
DROPOUT = """import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(F.dropout(x, p=0.5))
"""


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = cli.main(["lint", "--no-color", *args])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_exit_status_follows_the_findings(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "clean.py", CLEAN)
    write(project / "bad.py", BAD)
    write(project / "warn.py", WARNING_ONLY)
    assert run(["clean.py"], capsys)[0] == 0
    assert run(["bad.py"], capsys)[0] == 1
    assert run(["warn.py"], capsys)[0] == 0
    assert run(["warn.py", "--fail-on", "warning"], capsys)[0] == 1
    assert run(["bad.py", "--fail-on", "never"], capsys)[0] == 0


def test_flat_text_output_is_ruff_style(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "bad.py", BAD)
    status, out, _ = run(["bad.py"], capsys)
    lines = out.splitlines()
    assert lines[0] == (
        "bad.py:6:28: TD101 [error] CrossEntropyLoss receives probabilities: its input comes from "
        "`F.softmax(model(x), dim=1)` at line 5"
    )
    assert lines[1].startswith("    fix: Pass the raw logits")
    assert lines[-1] == "torchdoctor lint: 1 error, 0 warnings, 0 info"


def test_a_missing_path_is_a_one_line_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(["nope.py"], capsys)
    assert status == 2 and out == ""
    assert err == "torchdoctor: error: nope.py: no such file or folder\n"


def test_a_syntax_error_is_reported_and_the_other_files_are_linted(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "src" / "a_broken.py", "def f(:\n    pass\n")
    write(project / "src" / "b_bad.py", BAD)
    status, out, _ = run(["src", "--format", "json"], capsys)
    report = json.loads(out)
    assert status == 2
    assert [(f["rule"], f["file"], f["line"]) for f in report["findings"]] == [
        ("TD000", os.path.join("src", "a_broken.py"), 1), ("TD101", os.path.join("src", "b_bad.py"), 6)]
    assert "fatal_rules" not in report.get("meta", {})
    status, _, _ = run(["src", "--ignore", "TD000"], capsys)
    assert status == 1  # the syntax error was ignored on purpose


PEP_695 = """import torch


def first[T](items: list[T]) -> T:
    return items[0]
"""


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="PEP 695 generics parse on this Python")
def test_syntax_of_a_newer_python_says_which_python_it_needs(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file written for Python 3.12 is not broken: the finding names the version and the line,
    and the file is still not linted (exit 2, as for any file that cannot be parsed)."""
    write(project / "generic.py", PEP_695)
    write(project / "bad.py", BAD)
    status, out, _ = run([".", "--format", "json"], capsys)
    findings = json.loads(out)["findings"]
    assert status == 2
    newer = next(f for f in findings if f["rule"] == "TD000")
    assert (newer["file"], newer["line"], newer["severity"]) == ("generic.py", 4, "error")
    assert newer["message"].startswith("needs Python 3.12 or newer: a generic function (`def first[...]`, PEP 695)")
    assert "not valid Python" not in newer["message"]
    assert newer["evidence"]["needs_python"] == "3.12"
    assert [f["rule"] for f in findings if f["file"] == "bad.py"] == ["TD101"]


def test_unreadable_inputs_do_not_stop_the_run(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "good.py", BAD)
    (project / "latin.py").write_bytes(b"# -*- coding: ascii -*-\nname = '\xe9'\n")
    (project / "binary.py").write_bytes(b"\x00\x01\x02import torch\n")
    os.symlink("loop.py", project / "loop.py")
    status, out, _ = run(["good.py", "latin.py", "binary.py", "loop.py", "--format", "json"], capsys)
    findings = json.loads(out)["findings"]
    found = {(f["file"], f["rule"]) for f in findings}
    assert status == 2
    assert found == {("good.py", "TD101"), ("latin.py", "TD004"), ("binary.py", "TD004"), ("loop.py", "TD003")}
    said = {f["file"]: (f["line"], f["message"]) for f in findings if f["rule"] == "TD004"}
    assert said["latin.py"][0] == 2 and "line 2 is not ascii (byte 0xe9), the encoding the file declares" in said["latin.py"][1]
    assert said["binary.py"][0] == 1 and "line 1 contains a NUL byte" in said["binary.py"][1]


def test_links_in_folders_are_skipped_and_said_in_every_format(project: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "pkg" / "ok.py", CLEAN)
    os.symlink("missing.py", project / "pkg" / "broken.py")
    os.symlink("loop.py", project / "pkg" / "loop.py")
    os.symlink(".", project / "pkg" / "self")  # a folder loop: folders behind links are not walked
    status, out, _ = run(["pkg"], capsys)
    assert status == 0  # a warning: not a failure unless --fail-on warning
    assert "pkg/broken.py: TD007 [warning] not linted: a symbolic link that leads nowhere" in out
    skipped = {os.path.join("pkg", "broken.py"), os.path.join("pkg", "loop.py")}
    _, out, _ = run(["pkg", "--format", "json"], capsys)
    report = json.loads(out)
    assert {f["file"] for f in report["findings"] if f["rule"] == "TD007"} == skipped
    assert report["summary"]["warning"] == 2 and report["meta"]["files"] == 1
    _, out, _ = run(["pkg", "--format", "sarif"], capsys)
    results = json.loads(out)["runs"][0]["results"]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results
            if r["ruleId"] == "TD007"} == {p.replace(os.sep, "/") for p in skipped}
    _, out, _ = run(["pkg", "--format", "github"], capsys)
    assert "::warning file=pkg/broken.py,title=TD007 file-not-linted::not linted" in out
    _, out, _ = run(["pkg", "--format", "junit"], capsys)
    assert 'name="TD007 file-not-linted"' in out and "pkg/broken.py" in out
    assert run(["pkg", "--fail-on", "warning"], capsys)[0] == 1


def test_dist_folders_are_skipped_unless_they_are_packages(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "lib" / "dist" / "__init__.py", "")
    write(project / "lib" / "dist" / "comm.py", BAD)  # a package named dist: code
    write(project / "dist" / "lib-1.0" / "lib" / "comm.py", BAD)  # a build output
    write(project / "build" / "lib" / "lib" / "comm.py", BAD)
    _, out, _ = run(["--format", "json", "--fail-on", "never", "."], capsys)
    assert {f["file"] for f in json.loads(out)["findings"]} == {os.path.join("lib", "dist", "comm.py")}


def test_a_project_inside_a_folder_named_like_an_excluded_one_is_linted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "build" / "venv" / "work"
    write(root / "src" / "train.py", BAD)
    write(root / "src" / "build" / "gen.py", BAD)  # a build output inside the project: skipped
    monkeypatch.chdir(root)
    _, out, _ = run(["--format", "json", "--fail-on", "never", "src"], capsys)
    assert {f["file"] for f in json.loads(out)["findings"]} == {os.path.join("src", "train.py")}
    _, out, _ = run(["--format", "json", "--fail-on", "never", str(root)], capsys)
    assert [f["file"].endswith(os.path.join("src", "train.py")) for f in json.loads(out)["findings"]] == [True]


def test_noqa_and_ignore_comments_silence_one_line(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = BAD.replace("return F.cross_entropy(probs, y)", "return F.cross_entropy(probs, y)  # noqa: TD101")
    write(project / "a.py", source)
    write(project / "b.py", BAD.replace("(probs, y)", "(probs, y)  # torchdoctor: ignore[softmax-before-cross-entropy]"))
    write(project / "c.py", BAD.replace("(probs, y)", "(probs, y)  # noqa"))
    write(project / "d.py", BAD.replace("(probs, y)", "(probs, y)  # noqa: TD999"))
    assert run(["a.py", "b.py", "c.py"], capsys)[0] == 0
    assert run(["d.py"], capsys)[0] == 1


def test_select_and_ignore_by_code_name_and_category(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "bad.py", BAD + "\n\ndef predict(model, x):\n    return F.softmax(model(x))\n")

    def codes(*args: str) -> set[str]:
        _, out, _ = run(["bad.py", "--format", "json", *args], capsys)
        return {f["rule"] for f in json.loads(out)["findings"]}

    assert codes() == {"TD101", "TD150"}
    assert codes("--select", "TD101") == {"TD101"}
    assert codes("--select", "loss") == {"TD101"}
    assert codes("--ignore", "softmax-before-cross-entropy") == {"TD150"}
    assert codes("--select", "loss,api", "--ignore", "api") == {"TD101"}
    assert codes("--select", "TD1", "--ignore", "api") == {"TD101", "TD150"}  # the more specific selector wins
    write(project / "pyproject.toml", '[tool.torchdoctor]\nignore = ["TD150"]\n')
    assert codes() == {"TD101"}
    status, _, err = run(["bad.py", "--select", "TD9"], capsys)
    assert status == 2 and "unknown rule selector" in err


def test_excludes_gitignore_and_explicit_files(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / ".git").mkdir()
    write(project / ".gitignore", "generated/\n*_pb2.py\n")
    write(project / "pyproject.toml", '[tool.torchdoctor]\nexclude = ["third_party/"]\n')
    for name in ("app/train.py", "generated/g.py", "app/x_pb2.py", "third_party/t.py", ".venv/v.py", "app/keep.py"):
        write(project / name, BAD)

    def files(*args: str) -> set[str]:
        _, out, _ = run(["--format", "json", "--fail-on", "never", *args], capsys)
        return {f["file"] for f in json.loads(out)["findings"]}

    assert files(".") == {os.path.join("app", "train.py"), os.path.join("app", "keep.py")}
    assert files(".", "--exclude", "keep.py") == {os.path.join("app", "train.py")}
    assert files("third_party/t.py") == {os.path.join("third_party", "t.py")}  # named: always linted
    assert os.path.join("generated", "g.py") in files(".", "--no-respect-gitignore")


def test_json_sarif_and_github_formats(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "bad.py", BAD)
    _, out, _ = run(["bad.py", "--format", "json"], capsys)
    report = json.loads(out)
    assert report["schema"] == "torchdoctor.report/1" and report["command"] == "lint"
    finding = report["findings"][0]
    assert {k: finding[k] for k in ("rule", "name", "category", "severity", "file", "line", "column")} == {
        "rule": "TD101", "name": "softmax-before-cross-entropy", "category": "loss", "severity": "error",
        "file": "bad.py", "line": 6, "column": 28}
    assert report["summary"] == {"error": 1, "warning": 0, "info": 0}

    _, out, _ = run(["bad.py", "--format", "sarif"], capsys)
    sarif = json.loads(out)
    assert sarif["version"] == "2.1.0" and len(sarif["runs"]) == 1
    rules = sarif["runs"][0]["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids)) and all(r["fullDescription"]["text"] and r["help"]["markdown"] for r in rules)
    for result in sarif["runs"][0]["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note") and result["message"]["text"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == "bad.py"
        assert location["region"]["startLine"] == 6 and location["region"]["startColumn"] == 28

    _, out, _ = run(["bad.py", "--format", "github"], capsys)
    assert out.startswith("::error file=bad.py,line=6,col=28,title=TD101 softmax-before-cross-entropy::CrossEntropyLoss")
    assert "%0AFix: Pass the raw logits" in out


def test_output_file_gets_json_whatever_the_format(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "bad.py", BAD)
    run(["bad.py", "--format", "sarif", "--output", "report.json"], capsys)
    assert json.loads((project / "report.json").read_text())["findings"][0]["rule"] == "TD101"


def test_fix_applies_safe_fixes_and_is_idempotent(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(project / "net.py", DROPOUT)
    status, out, _ = run(["net.py"], capsys)
    assert status == 1 and "1 finding can be fixed with `torchdoctor lint --fix`" in out
    status, out, _ = run(["net.py", "--fix"], capsys)
    fixed = path.read_text()
    assert status == 0 and "fixed 1 finding in 1 file" in out
    assert "F.dropout(x, p=0.5, training=self.training)" in fixed
    ast.parse(fixed)
    run(["net.py", "--fix"], capsys)
    assert path.read_text() == fixed


def test_diff_shows_fixes_without_writing(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(project / "net.py", DROPOUT)
    status, out, err = run(["net.py", "--diff"], capsys)
    assert status == 1 and path.read_text() == DROPOUT
    assert "-        return self.fc(F.dropout(x, p=0.5))" in out
    assert "+        return self.fc(F.dropout(x, p=0.5, training=self.training))" in out
    assert "torchdoctor lint:" in err  # the report goes to stderr, stdout is the diff


def test_unsafe_fixes_need_the_flag(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = "from torch import nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n" \
             "        self.layers = [nn.Linear(2, 2) for _ in range(3)]\n\n    def forward(self, x):\n        return x\n"
    path = write(project / "m.py", source)
    run(["m.py", "--fix"], capsys)
    assert path.read_text() == source
    run(["m.py", "--fix", "--unsafe-fixes"], capsys)
    assert "self.layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])" in path.read_text()
    assert run(["m.py"], capsys)[0] == 0


def test_fix_keeps_line_endings_and_encoding(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = DROPOUT.replace("class Net", "# café\nclass Net").replace("\n", "\r\n")
    path = project / "crlf.py"
    path.write_bytes(source.encode("utf-8"))
    run(["crlf.py", "--fix"], capsys)
    data = path.read_bytes()
    assert b"training=self.training" in data and b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert "café" in data.decode("utf-8")


def test_every_fix_of_the_fixtures_parses_and_removes_its_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    fixtures = Path(__file__).parent / "fixtures"
    for fixture in sorted(fixtures.glob("*.py")):
        copy = tmp_path / fixture.name
        copy.write_text(fixture.read_text())
        run([copy.name, "--fix", "--unsafe-fixes", "--fail-on", "never"], capsys)
        ast.parse(copy.read_text())
        _, out, _ = run([copy.name, "--format", "json", "--fail-on", "never"], capsys)
        assert all("fix" not in f for f in json.loads(out)["findings"]), fixture.name


def test_stdin(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(BAD))
    status, out, _ = run(["-", "--stdin-filename", "model.py"], capsys)
    assert status == 1 and out.startswith("model.py:6:28: TD101")


def test_lint_does_not_import_torch(project: Path) -> None:
    write(project / "bad.py", BAD)
    code = "import sys; from torchdoctor import cli; cli.main(['lint', 'bad.py']); print('torch' in sys.modules)"
    result = children.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=project)
    assert result.stdout.strip().endswith("False")


def test_lint_imports_pathspec_only_to_read_patterns(project: Path) -> None:
    """Outside a repository, with no excludes, there is no pattern to match: lint's start-up
    does not pay for pathspec's import; a `.gitignore` in the folder walked needs it."""
    write(project / "src" / "bad.py", BAD)
    code = "import sys; from torchdoctor import cli; cli.main(['lint', 'src']); print('pathspec' in sys.modules)"
    result = children.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=project)
    assert result.stdout.strip().endswith("False"), result.stdout + result.stderr
    write(project / "src" / ".gitignore", "generated/\n")
    result = children.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=project)
    assert result.stdout.strip().endswith("True"), result.stdout + result.stderr


def test_a_folder_without_python_files_says_it_linted_none(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "docs" / "notes.txt", "not python\n")
    status, out, err = run(["docs"], capsys)
    assert status == 0
    assert "note: linted 0 files: no Python file to lint in docs" in out + err
    write(project / "one.py", CLEAN)
    _, out, err = run(["docs", "one.py"], capsys)
    assert "linted 0 files" not in out + err
