"""Plugins: the units of every family are found the same way, built-in or shipped by another
package through an entry point (core/plugins.py). The example plugin (tests/plugins/
td_example_plugin) is installed for real and `torchdoctor lint` reports its rule end to end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torchdoctor.core import plugins
from torchdoctor.health.runner import CHECKS
from torchdoctor.run.crash.explain import explainers
from torchdoctor.run.detectors import all_detectors

EXAMPLE = Path(__file__).resolve().parents[1] / "plugins" / "td_example_plugin"


def dist_info(folder: Path, name: str, entry_points: str) -> None:
    """An installed distribution as importlib.metadata reads it: its dist-info folder."""
    info = folder / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points), encoding="utf-8")


def test_units_are_ordered_by_what_they_declare_and_ties_keep_their_place() -> None:
    class A:
        ORDER = 20

    class B:
        pass  # no ORDER: after every unit that declares one

    class C:
        ORDER = 10

    class D:
        ORDER = 20

    assert plugins.ordered([A, B, C, D]) == [C, A, D, B]


def test_the_built_in_families_keep_their_declared_order() -> None:
    for units in (all_detectors(), CHECKS):
        assert [unit.ORDER for unit in units] == sorted(unit.ORDER for unit in units)
    assert len({d.ORDER for d in all_detectors()}) == len(all_detectors())
    assert explainers()[0].__module__ == "torchdoctor.run.crash.misc"  # torchrun's child failures first


def test_a_plugin_module_is_found_through_its_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "td_found_plugin.py").write_text("RULE = None\n", encoding="utf-8")
    dist_info(tmp_path, "td_found_plugin", "[torchdoctor.check]\nfound = td_found_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert [m.__name__ for m in plugins.modules("torchdoctor.check")][-1] == "td_found_plugin"


def test_a_plugin_that_fails_to_load_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist_info(tmp_path, "td_broken_plugin", "[torchdoctor.run]\nbroken = td_no_such_module\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(plugins.PluginError, match="torchdoctor.run plugin 'broken' .*td_no_such_module"):
        plugins.modules("torchdoctor.run")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example plugin, built and installed by pip into a folder of its own."""
    work = tmp_path_factory.mktemp("plugin")
    source = work / "source"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = work / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--no-index", "--target", str(target), str(source)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return target


def torchdoctor(site: Path | None, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    path = [str(site)] if site is not None else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "torchdoctor", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_lint_reports_the_rule_of_an_installed_plugin(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(textwrap.dedent("""\
        import torch
        from torch import nn


        class Net(nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                print(x.shape)
                return x


        def report(x: torch.Tensor) -> None:
            print(x.shape)  # not in forward: not flagged
        """), encoding="utf-8")
    linted = torchdoctor(installed, "lint", "model.py", "--format", "json", cwd=tmp_path)
    found = [(f["rule"], f["line"]) for f in json.loads(linted.stdout)["findings"]]
    assert ("TD998", 7) in found and ("TD998", 12) not in found, linted.stderr
    shown = torchdoctor(installed, "rule", "TD998", cwd=tmp_path)
    assert shown.returncode == 0 and "print-in-forward" in shown.stdout, shown.stderr
    without = torchdoctor(None, "lint", "model.py", "--format", "json", cwd=tmp_path)
    assert "TD998" not in [f["rule"] for f in json.loads(without.stdout)["findings"]]
