"""The engine's parts: names through imports, data flow, the single walk, order of calls,
file discovery patterns, source positions, and isolation of a failing rule."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from torchdoctor.core.config import Config
from torchdoctor.core.finding import Fix
from torchdoctor.linter import engine
from torchdoctor.linter.context import Context
from torchdoctor.linter.engine import FILE_END, Check, Engine
from torchdoctor.linter.files import Patterns
from torchdoctor.linter.fixes import apply_fixes
from torchdoctor.linter.names import ImportTable, argument, may_pass
from torchdoctor.linter.runner import Options, lint_paths
from torchdoctor.linter.source import Source
from torchdoctor.linter.steps import order


def imports(source: str) -> ImportTable:
    table = ImportTable()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            table.add(node)
    return table


def expr(source: str) -> ast.expr:
    return ast.parse(source, mode="eval").body


@pytest.mark.parametrize(("source", "name", "qualified"), [
    ("import torch.nn as nn", "nn.CrossEntropyLoss", "torch.nn.CrossEntropyLoss"),
    ("from torch.nn import functional as F", "F.softmax", "torch.nn.functional.softmax"),
    ("from torch import nn", "nn.functional.softmax", "torch.nn.functional.softmax"),
    ("import torch", "torch.nn.modules.loss.NLLLoss", "torch.nn.NLLLoss"),
    ("from torch.utils.data.dataloader import DataLoader as DL", "DL", "torch.utils.data.DataLoader"),
    ("import torch.optim as optim", "optim.adam.Adam", "torch.optim.Adam"),
    ("import pytorch_lightning as pl", "pl.LightningModule", "lightning.pytorch.LightningModule"),
    ("from . import nn", "nn.Linear", ".nn.Linear"),
    ("import numpy as np", "torch.softmax", None),
])
def test_names_resolve_through_imports(source: str, name: str, qualified: str | None) -> None:
    assert imports(source).resolve(expr(name)) == qualified


def test_the_torch_prefilter_sees_torch_family_imports() -> None:
    assert imports("from torchvision import models").torch
    assert not imports("import numpy").torch


def test_arguments_bind_by_keyword_or_position_and_unknown_is_not_missing() -> None:
    call = expr("DataLoader(ds, 8, True, None, None, 4)")
    assert ast.literal_eval(argument(call, "num_workers", 5)) == 4  # type: ignore[arg-type]
    assert argument(expr("DataLoader(ds, num_workers=2)"), "num_workers", 5).value == 2  # type: ignore[union-attr]
    assert not may_pass(expr("DataLoader(ds)"), "num_workers", 5)
    assert may_pass(expr("DataLoader(ds, **kwargs)"), "num_workers", 5)
    assert may_pass(expr("DataLoader(*args)"), "num_workers", 5)
    assert argument(expr("DataLoader(*args)"), "num_workers", 5) is None


def context_after(source: str) -> Context:
    engine.all_checks()
    ctx = Context(Source("x.py", source), frozenset(), {}, {}, frozenset({"step", "zero_grad", "backward"}))
    ctx.run(ast.parse(source))
    return ctx


def test_kinds_follow_values_across_lines_functions_and_classes() -> None:
    ctx = context_after(
        "import torch\nfrom torch import nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.loss = nn.NLLLoss()\n"
        "def make():\n    return {'model': nn.Sequential(nn.Linear(2, 2), nn.Softmax(1)), 'opt': 1}\n"
        "setup = make()\nmodel = setup['model'].to('cuda')\nopt = torch.optim.SGD(model.parameters())\n"
        "probs = model(x)\nflat = probs.view(-1)\nfirst, second = torch.load('a'), nn.MSELoss()\n"
    )
    bindings = ctx.module_scope.bindings
    assert bindings["model"].tag == "model" and bindings["model"].detail == "probs"  # type: ignore[union-attr]
    assert bindings["opt"].tag == "optimizer"  # type: ignore[union-attr]
    assert bindings["flat"].tag == "probs"  # type: ignore[union-attr]
    assert bindings["first"].tag == "checkpoint" and bindings["second"].tag == "loss_fn"  # type: ignore[union-attr]
    assert ctx.classes["Net"].attributes["loss"].detail == "NLLLoss"  # type: ignore[union-attr]


def test_events_know_their_order_and_exclusive_branches() -> None:
    ctx = context_after(
        "def f(opt, loss, a):\n"
        "    for x in a:\n"
        "        loss.backward()\n"
        "        if x:\n            opt.zero_grad()\n        else:\n            opt.step()\n"
        "        opt.step()\n"
    )
    scope = ctx.scopes[1]
    backward, zero, step_else, step = scope.events
    assert order(backward, zero) == -1 and order(step, zero) == 1
    assert order(zero, step_else) is None  # if / else: never both in one pass
    assert all(e.loops == backward.loops for e in (zero, step_else, step))


def test_one_walk_visits_every_node_once() -> None:
    seen: list[int] = []
    source = Path(__file__).parent.joinpath("clean", "gpt_trainer.py").read_text()
    check = Check(lambda node, ctx: seen.append(id(node)), ("TD101",), ast.Name, None, frozenset(), False)
    engine._CHECKS.append(check)
    try:
        Engine({"TD101"}).lint(Source("gpt.py", source))
    finally:
        engine._CHECKS.remove(check)
    names = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)]
    assert len(seen) == len(set(seen)) == len(names)


def test_checks_of_bound_names_and_of_attributes_by_name_see_only_those() -> None:
    seen: list[str] = []
    source = "for a, b in x.items():\n    c = a.data + d.data + b.grad\n    print(c.data)\n"
    checks = [Check(lambda node, ctx: seen.append(node.id), ("TD101",), ast.Name, None, frozenset(), False,
                    stores=True),
              Check(lambda node, ctx: seen.append(ast.unparse(node)), ("TD101",), ast.Attribute, frozenset({"data"}),
                    frozenset(), False)]
    engine._CHECKS.extend(checks)
    try:
        Engine({"TD101"}).lint(Source("x.py", source))
    finally:
        for check in checks:
            engine._CHECKS.remove(check)
    assert seen == ["a", "b", "c", "a.data", "d.data", "c.data"]


def test_a_failing_rule_is_reported_and_the_others_still_run(tmp_path: Path) -> None:
    def broken(node: ast.AST, ctx: Context) -> None:
        raise KeyError("boom")

    path = tmp_path / "bad.py"
    path.write_text("import torch.nn.functional as F\nloss = F.cross_entropy(F.softmax(x, 1), y)\n")
    check = Check(broken, ("TD150",), FILE_END, None, frozenset(), True)
    engine._CHECKS.append(check)
    try:
        findings = lint_paths([str(path)], Config(), Options()).report.findings
    finally:
        engine._CHECKS.remove(check)
    assert {f.rule for f in findings} == {"TD101", "TD005"}
    crash = next(f for f in findings if f.rule == "TD005")
    assert "KeyError: 'boom'" in crash.message and "TD150" in crash.message


def test_absurdly_deep_code_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "deep.py"
    path.write_text("x = " + " + ".join(["a"] * 20000) + "\n")
    (tmp_path / "ok.py").write_text("x = 1\n")
    findings = lint_paths([str(tmp_path)], Config(), Options()).report.findings
    assert [(Path(f.file).name, f.rule) for f in findings] == [("deep.py", "TD005")]  # type: ignore[arg-type]


def test_files_over_the_size_limit_in_folders_are_a_finding_and_named_ones_are_linted(tmp_path: Path) -> None:
    big = tmp_path / "big.py"
    big.write_text("import torch.nn.functional as F\n\n\ndef predict(x):\n    return F.softmax(x)\n" + "x = 1\n" * 1000)
    report = lint_paths([str(tmp_path)], Config(), Options(max_bytes=100)).report
    assert [(f.rule, f.severity.value, f.line) for f in report.findings] == [("TD007", "warning", None)]
    assert "over the" in report.findings[0].message
    named = lint_paths([str(big)], Config(), Options(max_bytes=100)).report
    assert [f.rule for f in named.findings] == ["TD150"] and named.meta["files"] == 1


@pytest.mark.parametrize(("pattern", "path", "is_dir", "excluded"), [
    ("build/", "pkg/build", True, True),
    ("build/", "pkg/build", False, None),
    ("*_pb2.py", "a/b/c_pb2.py", False, True),
    ("/top.py", "top.py", False, True),
    ("/top.py", "sub/top.py", False, None),
    ("docs/**/conf.py", "docs/a/b/conf.py", False, True),
    ("data/*.py", "data/x.py", False, True),
    ("data/*.py", "data/sub/x.py", False, None),
    ("?.py", "a.py", False, True),
    ("[ab].py", "c.py", False, None),
])
def test_gitignore_patterns(pattern: str, path: str, is_dir: bool, excluded: bool | None) -> None:
    assert Patterns([pattern], Path("/repo")).decide(Path("/repo") / path, is_dir) is excluded


def test_negation_re_includes() -> None:
    patterns = Patterns(["*.py", "!keep.py"], Path("/r"))
    assert patterns.decide(Path("/r/drop.py"), False) is True
    assert patterns.decide(Path("/r/keep.py"), False) is False


def test_source_columns_count_characters_and_lines_split_like_python() -> None:
    source = Source("x.py", "s = 'é'; y = 1\r\n\x0cz = 2\n")
    tree = ast.parse(source.text)
    y = tree.body[1].targets[0]  # type: ignore[attr-defined]
    assert source.char_column(1, y.col_offset) == 9
    assert source.line(2) == "\x0cz = 2"  # a form feed is not a line break for Python
    assert source.offset(2, 1) == source.text.index("z")


def test_overlapping_fixes_wait_for_the_next_round() -> None:
    source = Source("x.py", "abcdef\n")
    from torchdoctor.core.finding import Edit

    first = Fix("a", (Edit(1, 0, 1, 3, "X"),))
    second = Fix("b", (Edit(1, 2, 1, 4, "Y"),))
    third = Fix("c", (Edit(1, 5, 1, 5, "!"),))
    text, applied = apply_fixes(source, [second, first, third])
    assert (text, applied) == ("Xde!f\n", 2)


def test_a_check_that_needs_text_reads_only_files_that_contain_it() -> None:
    seen: list[str] = []
    check = Check(lambda node, ctx: seen.append(ctx.source.path), ("TD101",), ast.Assign, None, frozenset(), False,
                  frozenset({"backward"}))
    engine._CHECKS.append(check)
    try:
        linter = Engine({"TD101"})
        linter.lint(Source("model.py", "import torch\nx = torch.zeros(1)\n"))
        linter.lint(Source("train.py", "import torch\nx = torch.zeros(1)\nx.sum().backward()\n"))
    finally:
        engine._CHECKS.remove(check)
    assert seen == ["train.py"]


def test_a_file_left_out_of_a_check_records_the_same_events() -> None:
    """The events a check tracks are recorded in every file, so the checks that still run see
    the same order of calls whether the others run or not."""
    source = "import torch\ndef f(opt):\n    opt.zero_grad()\n    opt.step()\n"
    events = []
    for needs in (frozenset(), frozenset({"backward"})):
        check = Check(lambda node, ctx: None, ("TD101",), FILE_END, None, frozenset({"zero_grad", "step"}), False, needs)
        engine._CHECKS.append(check)
        try:
            linter = Engine({"TD101"})
            ctx = linter._walk(Source("f.py", source), ast.parse(source), linter.tables(source))
        finally:
            engine._CHECKS.remove(check)
        events.append([e.name for s in ctx.scopes for e in s.events])
    assert events[0] == events[1] == ["zero_grad", "step"]


def test_a_library_file_that_learns_what_its_functions_are_given_is_walked_again() -> None:
    """A file with no training words is walked with its checks first; when that walk learns
    what its functions are given (a model here), it is walked again knowing it, and the checks
    see the parameter's kind."""
    source = ("import torch.nn as nn\n"
              "def run(net, x):\n    return net(x)\n"
              "model = nn.Linear(2, 2)\nrun(model, 1)\n")
    kinds: list[object] = []

    def parameter_kind(node: ast.Return, ctx: Context) -> None:
        kinds.append(ctx.kind(ast.Name(id="net", ctx=ast.Load())))

    check = Check(parameter_kind, ("TD101",), ast.Return, None, frozenset(), False)
    engine._CHECKS.append(check)
    try:
        Engine({"TD101"}).lint(Source("lib.py", source))
    finally:
        engine._CHECKS.remove(check)
    assert kinds[0] is None and getattr(kinds[-1], "tag", None) == "model"


def test_td416_reads_no_values_where_autograd_is_on_and_nothing_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """TD416 follows a value only from a model call under no_grad(): an assignment with autograd
    on, in a scope holding no such value, is passed over without reading what it binds; the
    rule still reports the loss made from a no-grad output (both sides)."""
    read: list[int] = []
    kind = Context.kind
    monkeypatch.setattr(Context, "kind", lambda self, node: read.append(node.lineno) or kind(self, node))
    header = "import torch\nimport torch.nn as nn\nmodel = nn.Linear(2, 1)\nloss_fn = nn.MSELoss()\n"
    plain = header + "def step(x, y):\n    out = model(x)\n    loss = loss_fn(out, y)\n    loss.backward()\n"
    linter = Engine({"TD416"})
    assert linter.lint(Source("plain.py", plain)).findings == []
    assert read == []
    no_grad = header + ("def step(x, y):\n    with torch.no_grad():\n        out = model(x)\n"
                        "    loss = loss_fn(out, y)\n    loss.backward()\n")
    assert [f.rule for f in linter.lint(Source("no_grad.py", no_grad)).findings] == ["TD416"]


def test_td411_reads_only_files_that_spell_a_float64_conversion() -> None:
    """A float64 conversion (`.double()`, `torch.float64`, `torch.DoubleTensor`, or the import of
    one under another name) spells one of the words: a file with none is not read for TD411; a
    conversion through an imported alias is still reported."""
    linter = Engine({"TD411"})
    header = "import torch\nimport torch.nn as nn\nmodel = nn.Linear(2, 1)\n"
    plain = linter.tables(header + "def step(x):\n    return model(x.float())\n")
    assert not plain.handlers and not plain.call_handlers and not plain.file_end
    aliased = header + "from torch import DoubleTensor as D\ndef step(x):\n    return model(x.type(D))\n"
    assert [f.rule for f in linter.lint(Source("aliased.py", aliased)).findings] == ["TD411"]


def test_td111_follows_no_function_calls_in_a_file_that_resets_no_gradients(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every case of TD111's file-end check starts at a `zero_grad()`: a file with none is not
    followed into its functions; a reset between backward() and step() is still reported."""
    from torchdoctor.linter.checks import training_step

    followed: list[int] = []
    reached = training_step.reached
    monkeypatch.setattr(training_step, "reached", lambda events, ctx: followed.append(1) or reached(events, ctx))
    linter = Engine({"TD111"})
    body = ("import torch\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "def helper(x):\n    return model(x).sum()\n"
            "def train(x):\n    loss = helper(x)\n    loss.backward()\n{reset}    opt.step()\n")
    for name, reset, rules in (("none.py", "", []), ("reset.py", "    opt.zero_grad()\n", ["TD111"])):
        text = body.format(reset=reset)
        tree = ast.parse(text)
        ctx = linter._walk(Source(name, text), tree, linter.tables(text))
        followed.clear()
        training_step.zero_grad_before_step(tree, ctx)
        assert [f.rule for f in ctx.findings] == rules
        assert bool(followed) == bool(rules)


def test_td167_reads_the_names_of_an_if_only_when_its_text_names_a_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """TD167 remembers an `if` testing the torch version (or `hasattr(torch, ...)`): a test whose
    text spells no such word is not walked; the old API under a version test stays silent and
    the same call under another test is reported."""
    from torchdoctor.linter.checks import api_usage

    walked: list[ast.AST] = []
    walk = ast.walk
    monkeypatch.setattr(api_usage.ast, "walk", lambda node: walked.append(node) or walk(node))
    linter = Engine({"TD167"})
    body = "import torch\n{test}\n    scaler = torch.cuda.amp.GradScaler()\nelse:\n    scaler = None\n"
    plain = body.format(test="if torch.cuda.is_available():")
    assert [f.rule for f in linter.lint(Source("plain.py", plain)).findings] == ["TD167"]
    assert not any(isinstance(node, ast.expr) and ast.unparse(node) == "torch.cuda.is_available()" for node in walked)
    versioned = body.format(test="if torch.__version__ < '2.4':")
    assert linter.lint(Source("versioned.py", versioned)).findings == []
