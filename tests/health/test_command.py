"""`torchdoctor check` on the command line: reports, exit statuses, bad input, saved models."""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch
from torch import nn

from tests import children
from tests.lab import LAB
from torchdoctor import cli
from torchdoctor.core.errors import UsageError
from torchdoctor.core.progress import Progress
from torchdoctor.health.command import CHECK_NAMES
from torchdoctor.health.runner import NAMES

SOFTMAX = f"{LAB / '01_softmax_before_cross_entropy.py'}:make"
FIXED = f"{LAB / 'fixed' / '01_softmax_before_cross_entropy.py'}:make"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = cli.main(["check", *args, "--no-progress"])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_command_knows_every_check() -> None:
    assert CHECK_NAMES == NAMES


def test_text_report_lists_every_check_and_fails_on_the_error(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, SOFTMAX)
    assert status == 1
    assert out.count("✅") >= 8 and "❌  8. the loss gets what it expects: TD101" in out
    assert "01_softmax_before_cross_entropy.py:22: TD101 [error]" in out
    assert "14 checks:" in out


def test_a_correct_program_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, FIXED)
    assert status == 0 and "0 errors, 0 warnings" in out


def test_json_and_junit_carry_the_checks(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, out, _ = run(capsys, SOFTMAX, "--format", "junit", "--output", str(tmp_path / "r.json"))
    suite = ET.fromstring(out.split("\n", 1)[1]).find("testsuite")
    assert suite is not None and suite.get("tests") == "14" and suite.get("failures") == "1"
    report = json.loads((tmp_path / "r.json").read_text())
    assert [c["name"] for c in report["checks"]] == list(NAMES)
    assert {c["status"] for c in report["checks"]} <= {"passed", "failed", "warned", "skipped"}
    assert report["findings"][0]["rule"] == "TD101" and report["findings"][0]["line"] == 22


def test_skip_and_fail_on(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, SOFTMAX, "--skip", "loss", "--skip", "overfit", "--fail-on", "warning")
    assert status == 0 and "TD101" not in out and "12 checks" in out


@pytest.mark.parametrize(
    ("files", "target", "message"),
    [
        ({}, "missing.py:make", "missing.py does not exist"),
        ({"m.py": "def make(:\n"}, "m.py:make", "SyntaxError: invalid syntax at m.py:1"),
        ({"m.py": "x = 1\0\n"}, "m.py:make", "cannot import m.py: line 1 contains a NUL byte (a binary file, not Python source)"),
        ({"m.py": "x = 1\ns = '\udcff'\n"}, "m.py:make", "cannot import m.py: line 2 is not UTF-8 (byte 0xff)"),
        ({"m.py": "raise RuntimeError('no data dir')\ndef make():\n    pass\n"}, "m.py:make", "raised RuntimeError: no data dir at"),
        ({"m.py": "def make():\n    raise FileNotFoundError('train.csv')\n"}, "m.py:make", "make() raised FileNotFoundError: train.csv at"),
        ({"m.py": "def make():\n    return [1]\n"}, "m.py:make", "returned a list; it must return a dict"),
        ({"m.py": "def make():\n    return {'model': 1}\n"}, "m.py:make", "without 'data'"),
        ({"m.py": "def make():\n    return {'model': 'resnet', 'data': (1,)}\n"}, "m.py:make", "'model' is a str, not a torch.nn.Module"),
        ({"m.py": "def make():\n    return {'model': 3, 'data': (1,)}\n"}, "m.py:make", "'model' is an int, not a torch.nn.Module"),
        ({"m.py": "def make():\n    return 3\n"}, "m.py:make", "returned an int; it must return a dict"),
        ({"m.py": "make = object()\n"}, "m.py:make", "m.py:make is an object, not a function"),
        ({"m.py": "def make(n):\n    return {}\n"}, "m.py:make", "takes arguments"),
        ({"m.py": "def make():\n    return {}\n"}, "m.py:build", "has no function 'build'; it defines make"),
        ({}, "no_such_package.models:make", "no module named 'no_such_package.models'"),
    ],
)
def test_bad_targets_exit_2_with_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          files: dict[str, str], target: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        (tmp_path / name).write_bytes(text.encode("utf-8", "surrogateescape"))  # "\udcff": the byte 0xff
    status, out, err = run(capsys, target)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("torchdoctor: error: ") and message in err, err
    assert "None" not in err


LOOP = (
    "for step in range(3):\n"
    "    pathlib.Path('trained').write_text('yes')\n"
    "    model(torch.randn(4, 2)).sum().backward()\n"
    "    opt.step()\n"
)
HEAD = "import pathlib\nimport torch\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
MAKE = "def make():\n    return {'model': model, 'data': (torch.randn(4, 2), torch.randn(4, 1)), 'loss_fn': torch.nn.MSELoss()}\n"


def _indented(text: str) -> str:
    return "".join(f"    {line}\n" for line in text.splitlines())


@pytest.mark.parametrize(
    ("source", "target", "message"),
    [
        (HEAD + LOOP, "train.py",
         "train.py has no function 'make' (a TARGET without :FUNCTION names 'make'): name the factory as train.py:FUNCTION"),
        (HEAD + "def main():\n    pass\n" + LOOP, "train.py:build",
         "train.py has no function 'build'; it defines main: name the factory as train.py:FUNCTION"),
        (HEAD + MAKE + LOOP, "train.py:make",
         "train.py trains when imported: the loop at line 7 calls model(torch.randn(4, 2)).sum().backward() (line 9), "
         "at the module level; put the training under `if __name__ == \"__main__\":`"),
        (HEAD + MAKE + "def fit():\n" + _indented(LOOP) + "fit()\n", "train.py:make",
         "train.py trains when imported: line 12 calls fit(), whose loop at line 8 calls"),
    ],
    ids=["no-factory-by-default", "another-name", "module-level-loop", "module-level-call"],
)
def test_a_training_script_is_not_imported_when_check_cannot_use_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, target: str, message: str
) -> None:
    """Importing a training script runs its training: `check` reads the source first and imports
    only a file that defines the factory and does not train at its module level."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(source)
    status, out, err = run(capsys, target)
    assert status == 2 and out == "" and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "trained").exists()


def test_a_factory_beside_a_guarded_loop_is_imported(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same script with its loop under `if __name__ == "__main__":`, or with the loop only in
    a comment or a string, is imported and checked, and no loop runs."""
    monkeypatch.chdir(tmp_path)
    guarded = HEAD + MAKE + "if __name__ == '__main__':\n" + _indented(LOOP)
    quoted = HEAD + MAKE + "# for step in range(3): loss.backward()\nNOTE = '''\n" + LOOP + "'''\n"
    for source in (guarded, quoted):
        (tmp_path / "train.py").write_text(source)
        status, out, err = run(capsys, "train.py:make", "--skip", "overfit")
        assert status == 0 and "torchdoctor check: 0 errors" in out, (source, out, err)
        assert not (tmp_path / "trained").exists()


def test_a_module_target_without_the_factory_is_not_imported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "trainpkg").mkdir()
    (tmp_path / "trainpkg" / "__init__.py").write_text("")
    (tmp_path / "trainpkg" / "loop.py").write_text(HEAD + "def main():\n    pass\n" + LOOP)
    status, _, err = run(capsys, "trainpkg.loop:make")
    assert status == 2 and "trainpkg.loop has no function 'make'" in err and "it defines main" in err, err
    assert not (tmp_path / "trained").exists()


def test_a_dataset_that_raises_is_a_one_line_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader, Dataset\n"
        "class Files(Dataset):\n    def __len__(self):\n        return 4\n"
        "    def __getitem__(self, i):\n        raise KeyError(i)\n"
        "def make():\n    return {'model': torch.nn.Linear(2, 2), 'data': DataLoader(Files())}\n"
    )
    status, _, err = run(capsys, f"{tmp_path / 'broken.py'}:make")
    assert status == 2 and "taking the first batch from the DataLoader raised KeyError: 0 at" in err and "broken.py:7" in err


def test_target_or_model_but_not_both(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, SOFTMAX, "--model", "x.pt")[0] == 2
    assert run(capsys)[0] == 2


def _conv() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 5))


def test_saved_torchscript_and_export_archives(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    torch.jit.save(torch.jit.script(_conv()), str(tmp_path / "model.pt"))
    torch.export.save(torch.export.export(_conv(), (torch.randn(2, 3, 12, 12),)), str(tmp_path / "model.pt2"))
    for name in ("model.pt", "model.pt2"):
        status, out, err = run(capsys, "--model", str(tmp_path / name), "--input-shape", "3,12,12", "--num-classes", "5")
        assert status == 0, (name, out, err)
        assert "✅  4. every trainable parameter gets a gradient" in out


def test_a_pickle_needs_trust(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    torch.save(_conv(), tmp_path / "whole.pt")
    torch.save(_conv().state_dict(), tmp_path / "weights.pt")
    args = ("--input-shape", "3,12,12", "--num-classes", "5")
    status, _, err = run(capsys, "--model", str(tmp_path / "whole.pt"), *args)
    assert status == 2 and "--trust-pickle" in err
    assert run(capsys, "--model", str(tmp_path / "whole.pt"), *args, "--trust-pickle")[0] == 0
    status, _, err = run(capsys, "--model", str(tmp_path / "weights.pt"), *args)
    assert status == 2 and "state_dict, not a model" in err
    assert run(capsys, "--model", str(tmp_path / "whole.pt"), "--input-shape", "3,x")[0] == 2


def test_progress_goes_to_a_terminal_only(capsys: pytest.CaptureFixture[str]) -> None:
    with Progress("torchdoctor check", 3) as progress:  # pytest's stderr is not a terminal
        progress.update(1, "something")
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_end_to_end_in_a_subprocess() -> None:
    result = children.run(
        [sys.executable, "-m", "torchdoctor", "check", SOFTMAX, "--format", "json"],
        capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300,
    )
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["summary"]["error"] == 1
    imported = children.run(
        [sys.executable, "-c", "import sys, torchdoctor.health.command; print('torch' in sys.modules)"],
        capture_output=True, text=True,
    )
    assert imported.stdout.strip() == "False"


def test_a_package_module_target(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "setup_training.py").write_text(
        "import torch\nfrom torch import nn\n"
        "def build():\n    return {'model': nn.Linear(4, 2), 'data': (torch.randn(8, 4), torch.arange(8) % 2), 'loss_fn': nn.CrossEntropyLoss()}\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    status, out, err = run(capsys, "mypkg.setup_training:build")
    assert status == 0, err
    assert out.startswith("torchdoctor check mypkg.setup_training:build")


SCHEDULED = """
import torch
from torch import nn


def make():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    return {"model": model, "data": (x, y), "optimizer": optimizer, "scheduler": scheduler, "loss": nn.MSELoss()}
"""


def test_keys_the_check_does_not_use_are_named_in_the_report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "scheduled.py").write_text(SCHEDULED)
    status, out, _ = run(capsys, f"{tmp_path / 'scheduled.py'}:make", "--skip", "overfit", "--skip", "dataloader")
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert any("'scheduler'" in n and "not stepped" in n for n in notes), notes
    assert any("'loss'" in n and "did you mean 'loss_fn'" in n for n in notes), notes
    _, out, _ = run(capsys, f"{tmp_path / 'scheduled.py'}:make", "--skip", "overfit", "--skip", "dataloader",
                    "--format", "json")
    assert sum("ignored" in n for n in json.loads(out)["notices"]) == 2


def test_check_of_a_factory_alone() -> None:
    """`torchdoctor.check(make)`: what the command does with file.py:make, from Python."""
    import importlib.util

    import torchdoctor

    spec = importlib.util.spec_from_file_location("lab01", SOFTMAX.split(":")[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = torchdoctor.check(module.make, progress=False, overfit_steps=20)
    assert "TD101" in {f.rule for f in report.findings} and report.title == "torchdoctor check lab01:make"
    with pytest.raises(UsageError, match="'data' is a NoneType"):
        torchdoctor.check(module.make()["model"])
