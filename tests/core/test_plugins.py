"""Plugins: the units of every family are found the same way, built-in or shipped by another
package through an entry point (core/plugins.py), and each is checked against its family's
contract as it loads: a malformed one, built-in or a plugin's, fails naming itself. The example
plugin (tests/plugins/td_example_plugin) is installed for real and `torchdoctor lint` reports
its rule end to end."""

from __future__ import annotations

import ast
import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from torchdoctor.core import plugins
from torchdoctor.health.runner import CHECKS
from torchdoctor.linter import engine
from torchdoctor.linter.engine import FILE_END, lint_check
from torchdoctor.observe.crash.explain import explainers
from torchdoctor.observe.detector import EVENTS, Detector
from torchdoctor.observe.detectors import all_detectors
from torchdoctor.observe.events import Step
from torchdoctor.observe.instruments.series import SeriesRecorder
from torchdoctor.rules.loss.softmax_before_cross_entropy import RULE as TD101
from torchdoctor.trace.tracer import StepTracer

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
    assert explainers()[0].__module__ == "torchdoctor.observe.crash.misc"  # torchrun's child failures first


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


# -- the contract of each family, checked as its units load ------------------------------------


def test_every_built_in_unit_keeps_its_contract() -> None:
    """Every built-in unit loads (each is checked as it loads), and no check module is left out."""
    for group in plugins.GROUPS:
        plugins.modules(group)
    package = importlib.import_module("torchdoctor.health.checks")
    assert {check.__name__ for check in CHECKS} == {module.__name__ for module in plugins.walk(package)[1:]}
    assert all_detectors() and engine.all_checks() and explainers()
    assert StepTracer.rules == SeriesRecorder.rules == ()  # they report nothing: installed always


def defined(namespace: dict[str, Any]) -> type[Detector]:
    return type("Late", (Detector,), {"__module__": "td_plugin.detectors", **namespace})


def on_step(self: Detector, event: Step) -> None:
    """An event method."""


def test_a_well_formed_detector_is_defined() -> None:
    defined({"rules": (TD101,), "on_step": on_step, "on_gpu": False})  # `on_gpu`: a flag, not a method
    defined({"rules": ()})  # reports nothing: installed always
    inherited = type("Later", (defined({"rules": (TD101,)}),), {"on_step_end": on_step})
    assert inherited.rules == (TD101,)


@pytest.mark.parametrize(("namespace", "problem"), [
    ({"rules": (TD101,), "on_stpe": on_step},
     "defines on_stpe, which is no event and would never be called (did you mean on_step?)"),
    ({"rules": (TD101,), "on_everything": on_step},
     f"defines on_everything, which is no event and would never be called (the events are {', '.join(EVENTS)})"),
    ({}, "declares no rules (`rules = (RULE, ...)`, the rules it may report; `rules = ()` if it reports none)"),
    ({"rule": (TD101,)},
     "declares no rules (`rules = (RULE, ...)`, the rules it may report; `rules = ()` if it reports none)"),
    ({"rules": TD101}, "has rules of type Rule, not a tuple of Rules (`rules = (RULE, ...)`)"),
    ({"rules": ("TD101",)}, "lists 'TD101' in its rules, not a Rule (give the rule object, `RULE`, not its code)"),
])
def test_a_malformed_detector_fails_as_it_is_defined(namespace: dict[str, Any], problem: str) -> None:
    with pytest.raises(plugins.PluginError) as raised:
        defined(namespace)
    assert str(raised.value) == f"td_plugin.detectors: the detector Late {problem}"


def node_and_ctx(node: ast.AST, ctx: object) -> None:
    """A lint check's signature."""


def node_only(node: ast.AST) -> None:
    """Not a lint check's: the engine calls it with the context too."""


def test_a_well_formed_check_registers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "_CHECKS", [])
    lint_check(TD101, ast.Call, names={"softmax"})(node_and_ctx)
    lint_check([TD101], FILE_END, tracks=("step",), needs_text=["backward"])(node_and_ctx)
    assert [(item.codes, item.on) for item in engine._CHECKS] == [(("TD101",), ast.Call), (("TD101",), FILE_END)]


@pytest.mark.parametrize(("function", "rules", "on", "keywords", "problem"), [
    (node_only, TD101, ast.Call, {}, "takes (node: 'ast.AST') -> 'None'; a check is called as check(node, ctx)"),
    (node_and_ctx, "TD101", ast.Call, {}, "is given 'TD101', not a Rule (give the rule object, RULE, not its code)"),
    (node_and_ctx, (), ast.Call, {}, "names no rule, so it would never run"),
    (node_and_ctx, TD101, "Call", {}, "is given on='Call', neither an ast node class nor FILE_END"),
    (node_and_ctx, TD101, ast.Name, {"names": {"x"}}, "is given names=, which only applies to on=ast.Call or ast.Attribute"),
    (node_and_ctx, TD101, ast.Attribute, {"stores": True}, "is given stores=True, which only applies to on=ast.Name"),
    (node_and_ctx, TD101, ast.Call, {"names": "step"},
     "is given names='step', one string, not a collection of them (names={'step'})"),
    (node_and_ctx, TD101, FILE_END, {"tracks": "step"},
     "is given tracks='step', one string, not a collection of them (tracks={'step'})"),
])
def test_a_malformed_check_fails_as_it_is_decorated(
    monkeypatch: pytest.MonkeyPatch, function: Any, rules: Any, on: Any, keywords: dict[str, Any], problem: str
) -> None:
    monkeypatch.setattr(engine, "_CHECKS", [])
    with pytest.raises(plugins.PluginError) as raised:
        lint_check(rules, on, **keywords)(function)
    assert str(raised.value) == f"{__name__}: the @lint_check function {function.__qualname__} {problem}"
    assert engine._CHECKS == []


def unit(name: str, **parts: object) -> ModuleType:
    """A module with these attributes, as a plugin's would be once imported."""
    module = ModuleType(name)
    vars(module).update(parts)
    return module


def explain_nothing(crash: object, observed: object) -> None:
    """An explainer that explains nothing."""


def run_check(ctx: object) -> None:
    """A health check's run."""


HEALTH = {"NAME": "bad-check", "TITLE": "a check", "RULES": ("TD101",), "run": run_check}


@pytest.mark.parametrize(("group", "parts"), [
    ("torchdoctor.rules", {"RULE": TD101}),
    ("torchdoctor.rules", {"CODE": "TD101"}),  # no RULE: a package's module of helpers
    ("torchdoctor.crash", {"EXPLAINERS": (explain_nothing,), "ORDER": 5}),
    ("torchdoctor.crash", {"EXPLAINERS": [explain_nothing, print]}),  # a builtin: no signature to read
    ("torchdoctor.crash", {"describe": explain_nothing}),  # no EXPLAINERS: a helper module
    ("torchdoctor.check", HEALTH),
    ("torchdoctor.check", {**HEALTH, "RULES": ()}),
    ("torchdoctor.check", {"shape": run_check}),  # none of a check's parts: a helper module
])
def test_a_well_formed_module_keeps_its_contract(group: str, parts: dict[str, object]) -> None:
    plugins.CONTRACTS[group](unit("td_plugin.unit", **parts))


@pytest.mark.parametrize(("group", "parts", "problem"), [
    ("torchdoctor.rules", {"RULE": "TD101"}, "RULE is a str, not a Rule"),
    ("torchdoctor.crash", {"EXPLAINERS": explain_nothing},
     "EXPLAINERS is a function, not a tuple of explainers (functions (crash, observed) -> Explanation | None)"),
    ("torchdoctor.crash", {"EXPLAINERS": ("TD101",)},
     "the explainer 'TD101' in EXPLAINERS is a str, not a function; an explainer is called as explainer(crash, observed)"),
    ("torchdoctor.crash", {"EXPLAINERS": (run_check,)},
     "the explainer run_check in EXPLAINERS takes (ctx: 'object') -> 'None'; an explainer is called as "
     "explainer(crash, observed)"),
    ("torchdoctor.check", {**HEALTH, "run": None},
     "run is a NoneType, not a function; a health check is called as run(ctx)"),
    ("torchdoctor.check", {**HEALTH, "run": explain_nothing},
     "run takes (crash: 'object', observed: 'object') -> 'None'; a health check is called as run(ctx)"),
    ("torchdoctor.check", {"NAME": "bad-check", "RULES": ("TD101",)},
     "a health check defines NAME, TITLE, RULES and run(ctx); it lacks TITLE, run"),
    ("torchdoctor.check", {**HEALTH, "NAME": ""}, "NAME is '', not a non-empty string"),
    ("torchdoctor.check", {**HEALTH, "RULES": ["TD101"]},
     "RULES is a list, not a tuple of rule codes such as (RULE.code,)"),
    ("torchdoctor.check", {**HEALTH, "RULES": (TD101,)}, "RULES holds the Rule TD101 itself, not its code (RULE.code)"),
    ("torchdoctor.check", {**HEALTH, "RULES": ("td998",)},
     "RULES holds 'td998', not a rule code ('TD' and 3 digits, RULE.code)"),
    ("torchdoctor.check", {**HEALTH, "RULES": ("TD101", "TD998", "TD997")},
     "RULES names TD998, TD997, which no rule has (`torchdoctor rules` lists the codes)"),
])
def test_a_malformed_module_fails_naming_itself(group: str, parts: dict[str, object], problem: str) -> None:
    with pytest.raises(plugins.PluginError) as raised:
        plugins.CONTRACTS[group](unit("td_plugin.unit", **parts))
    assert str(raised.value) == f"td_plugin.unit: {problem}"


def test_health_checks_with_their_own_names_load_together() -> None:
    plugins.FAMILY_CONTRACTS["torchdoctor.check"]([
        unit("td_plugin.one", **HEALTH), unit("td_plugin.two", **{**HEALTH, "NAME": "other-check"}),
        unit("td_plugin.helper", shape=run_check), unit("td_plugin.helper2", shape=run_check)])


def test_a_second_health_check_with_a_taken_name_fails_naming_itself() -> None:
    with pytest.raises(plugins.PluginError) as raised:
        plugins.FAMILY_CONTRACTS["torchdoctor.check"]([unit("td_plugin.one", **HEALTH), unit("td_plugin.two", **HEALTH)])
    assert str(raised.value) == ("td_plugin.two: NAME 'bad-check' is the NAME of td_plugin.one already; "
                                 "each health check has its own")


def test_a_plugin_check_named_as_a_built_in_one_fails_naming_the_plugin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "td_twin_check.py").write_text(
        'NAME = "loss"\nTITLE = "a second loss check"\nRULES = ("TD101",)\n\n\ndef run(ctx):\n    pass\n',
        encoding="utf-8")
    dist_info(tmp_path, "td_twin_check", "[torchdoctor.check]\ntwin = td_twin_check\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(plugins.PluginError) as raised:
        plugins.modules("torchdoctor.check")
    assert str(raised.value) == ("td_twin_check: NAME 'loss' is the NAME of torchdoctor.health.checks.loss already; "
                                 "each health check has its own")


MALFORMED = {
    "torchdoctor.run": ("""\
        from torchdoctor.rules.loss.softmax_before_cross_entropy import RULE
        from torchdoctor.observe.detector import Detector


        class Late(Detector):
            rules = (RULE,)

            def on_stpe(self, event):
                pass
        """, "the detector Late defines on_stpe, which is no event and would never be called (did you mean on_step?)"),
    "torchdoctor.check": ("""\
        NAME = "bad-check"
        TITLE = "a check that lost its run"
        RULES = ("TD998",)
        """, "a health check defines NAME, TITLE, RULES and run(ctx); it lacks run"),
    "torchdoctor.lint": ("""\
        import ast

        from torchdoctor.linter.api import lint_check


        @lint_check("TD101", ast.Call)
        def by_code(node, ctx):
            pass
        """, "the @lint_check function by_code is given 'TD101', not a Rule (give the rule object, RULE, not its code)"),
    "torchdoctor.crash": ("""\
        EXPLAINERS = "explain"
        """, "EXPLAINERS is a str, not a tuple of explainers (functions (crash, observed) -> Explanation | None)"),
}


def malformed_plugin(folder: Path, group: str) -> str:
    """An installed plugin of `group` whose module breaks the family's contract; its module's name."""
    name = "td_malformed_" + group.rpartition(".")[2]
    (folder / f"{name}.py").write_text(textwrap.dedent(MALFORMED[group][0]), encoding="utf-8")
    dist_info(folder, name, f"[{group}]\nmalformed = {name}\n")
    return name


@pytest.mark.parametrize("group", sorted(MALFORMED))
def test_a_malformed_plugin_fails_naming_itself(group: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if group == "torchdoctor.lint":
        monkeypatch.setattr(engine, "_CHECKS", [])
    name = malformed_plugin(tmp_path, group)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(plugins.PluginError) as raised:
        plugins.modules(group)
    assert str(raised.value) == f"{name}: {MALFORMED[group][1]}"


def test_a_malformed_check_plugin_is_a_one_line_error_of_the_command(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    name = malformed_plugin(site, "torchdoctor.check")
    (tmp_path / "train.py").write_text("import torch\n", encoding="utf-8")
    checked = torchdoctor(site, "check", "train.py", cwd=tmp_path)
    assert checked.returncode == 2
    assert checked.stderr == f"torchdoctor: error: {name}: {MALFORMED['torchdoctor.check'][1]}\n"


@pytest.mark.parametrize("group", ["torchdoctor.run", "torchdoctor.crash"])
def test_a_malformed_run_plugin_stops_run_before_the_script_starts(group: str, tmp_path: Path) -> None:
    """The detectors and explainers load in the script's processes; the runner checks the
    plugins first, so a malformed one costs one line and exit 2, not an unobserved run."""
    site = tmp_path / "site"
    site.mkdir()
    name = malformed_plugin(site, group)
    (tmp_path / "train.py").write_text("import torch\n\nprint('the script ran')\n", encoding="utf-8")
    ran = torchdoctor(site, "run", "train.py", cwd=tmp_path)
    assert ran.returncode == 2
    assert ran.stderr == f"torchdoctor: error: {name}: {MALFORMED[group][1]}\n"
    assert "the script ran" not in ran.stdout