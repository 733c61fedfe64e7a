"""Comments and strings are text, never calls or names: `# model.eval()` above a validation
loop, a TODO on its line or a docstring that quotes the call must not change any rule's verdict
(issue 27: a commented-out call is exactly how such a bug gets in).

Two families: every lint rule's doc Example keeps its finding when the lines that "Use instead"
adds are written as comments, strings or a docstring; and hand-made cases for the checks that
look for a word in the file (a call that allows something, a setting, a streamed dataset), with
the real code on the other side.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.lint.conftest import lint_file
from torchdoctor.core import registry
from torchdoctor.core.rule import Rule

LINT_RULES = [rule for rule in registry.all_rules() if rule.proof == "lint" and rule.code != "TD000"]


def _codes(source: str, folder: Path) -> set[str]:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "example.py"
    path.write_text(source, encoding="utf-8")
    return {finding.rule for finding in lint_file(path)}


def _with_fix_as_text(rule: Rule, form: str) -> str:
    """The rule's Example, with each line its 'Use instead' adds (or changes) also written as `form`:
    a comment, a string statement, or a docstring, next to the Example's own lines."""
    bad, good = rule.example.splitlines(), rule.use_instead.splitlines()
    lines: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=bad, b=good, autojunk=False).get_opcodes():
        lines.extend(bad[i1:i2])
        if tag == "equal":
            continue
        for line in good[j1:j2]:
            indent, text = line[: len(line) - len(line.lstrip())], line.strip()
            if text:
                written = {"comment": f"# {text}", "string": repr(text), "docstring": '"""' + text.replace('"""', "'''") + '"""'}
                lines.append(indent + written[form])
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("form", ["comment", "string", "docstring"])
@pytest.mark.parametrize("rule", LINT_RULES, ids=lambda r: r.code)
def test_the_fix_written_as_text_keeps_the_finding(rule: Rule, form: str, tmp_path: Path) -> None:
    source = _with_fix_as_text(rule, form)
    if source == rule.example.rstrip("\n") + "\n":
        pytest.skip("'Use instead' only removes lines")
    try:
        compile(source, "example.py", "exec")
    except SyntaxError:
        pytest.skip(f"the fix's lines cannot be {form}s where they stand (a block header)")
    assert rule.code in _codes(source, tmp_path), f"{rule.code} silenced by its fix written as a {form}:\n{source}"


@dataclass(frozen=True)
class Case:
    """`code` with `{}` where `evidence` goes (the real code); `silences`: the real evidence
    turns the finding off (else it turns one on); `text`: it as a comment, a string, a docstring."""

    rule: str
    code: str
    evidence: str
    comment: str
    string: str
    docstring: str
    silences: bool = True


CASES = {
    "TD133-eval": Case(
        "TD133", '''{doc}import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    model.train()
    for _ in range(5):
        optimizer.zero_grad()
        model(torch.randn(16, 8)).pow(2).mean().backward()
        optimizer.step()
    {}
    with torch.no_grad():
        print(model(torch.randn(16, 8)).sum())
''', evidence="model.eval()", comment="# model.eval()", string="print('call model.eval() here')",
        docstring='"""Validation: call model.eval() first."""\n'),
    "TD133-todo-on-the-with": Case(
        "TD133", '''{doc}import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    for _ in range(5):
        optimizer.zero_grad()
        model(torch.randn(16, 8)).pow(2).mean().backward()
        optimizer.step()
    with torch.no_grad():{}
        print(model(torch.randn(16, 8)).sum())
''', evidence="\n        model.eval()", comment="  # TODO: call model.eval() here", string="\n        'TODO: model.eval()'",
        docstring='"""TODO: model.eval() before the no_grad block."""\n'),
    "TD174-safe-globals": Case(
        "TD174", '''{doc}import argparse

import torch

{}


def save(model, optimizer, args, epoch):
    torch.save({{"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "epoch": epoch, "args": args}}, f"{{args.output_dir}}/checkpoint.pth")


def resume(model, optimizer, path):
    checkpoint = torch.load(path, map_location="cpu")
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return checkpoint["epoch"]
''', evidence="torch.serialization.add_safe_globals([argparse.Namespace])",
        comment="# torch.serialization.add_safe_globals([argparse.Namespace])",
        string="NOTE = 'torch.serialization.add_safe_globals([argparse.Namespace])'",
        docstring='"""Resume needs torch.serialization.add_safe_globals([argparse.Namespace])."""\n'),
    "TD143-streamed": Case(
        "TD143", '''{doc}import torch.nn.functional as F
from torch.utils.data import DataLoader

from project.data import make_dataset

{}


def train(model, optimizer):
    for inputs, labels in DataLoader(make_dataset("train"), batch_size=32, shuffle=False):
        optimizer.zero_grad()
        F.cross_entropy(model(inputs), labels).backward()
        optimizer.step()
''', evidence="import webdataset as wds", comment="# TODO: stream it as an IterableDataset",
        string="NOTE = 'streaming'", docstring='"""Not an IterableDataset: the data fits in memory."""\n'),
    "TD143-sorted-by-length": Case(
        "TD143", '''{doc}import torch.nn.functional as F
from torch.utils.data import DataLoader

from project.data import load_samples


def train(model, optimizer):
    samples = load_samples("train")
    {}
    for inputs, labels in DataLoader(samples, batch_size=32, shuffle=False):
        optimizer.zero_grad()
        F.cross_entropy(model(inputs), labels).backward()
        optimizer.step()
''', evidence='samples.sort(key=lambda s: len(s["tokens"]))', comment='# samples.sort(key=lambda s: len(s["tokens"]))',
        string='samples.sort(key=lambda s: s["filename"])', docstring='"""Sorted by length: samples.sort(key=len)."""\n'),
    "TD411-float64-setting": Case(
        "TD411", '''{doc}import torch
import torch.nn.functional as F
from torch import nn

{}


def train(loader, device):
    model = nn.Linear(784, 10).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for data, target in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(data.double()), target).backward()
        optimizer.step()
''', evidence='DTYPE = "float64"', comment='# DTYPE = "float64"', string="""HELP = 'pass --dtype "float64" for double precision'""",
        docstring='"""Run with DTYPE = "float64" for double precision."""\n'),
    "TD169-set-default-dtype": Case(
        "TD169", '''{doc}import torch

{}


def init_output(dim_size, output_dim, device):
    return torch.zeros(dim_size, output_dim, requires_grad=True, device=device).float()
''', evidence="torch.set_default_dtype(torch.float64)", comment="# torch.set_default_dtype(torch.float64)",
        string="print('torch.set_default_dtype(torch.float64)')",
        docstring='"""Never call torch.set_default_dtype() here."""\n', silences=False),
}


@pytest.mark.parametrize("form", ["comment", "string", "docstring"])
@pytest.mark.parametrize("name", CASES)
def test_a_word_in_text_does_not_decide(name: str, form: str, tmp_path: Path) -> None:
    case = CASES[name]
    text = getattr(case, form)
    source = case.code.format("", doc=text) if form == "docstring" else case.code.format(text, doc="")
    found = case.rule in _codes(source, tmp_path)
    assert found is case.silences, f"{case.rule} {'silenced' if case.silences else 'raised'} by a {form}:\n{source}"


@pytest.mark.parametrize("name", CASES)
def test_the_real_code_decides(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    assert (case.rule in _codes(case.code.format("", doc=""), tmp_path)) is case.silences
    assert (case.rule in _codes(case.code.format(case.evidence, doc=""), tmp_path / "real")) is not case.silences


@pytest.mark.parametrize(("key", "silent"), [
    ("len", True), ("lambda s: s.seqLen", True), ('lambda s: s["length"]', True), ("lambda s: s.num_frames", False),
    ('lambda s: s["filename"]', False), ("lambda s: s.filename", False),
], ids=["len", "camel", "length-key", "other-name", "filename-key", "filename-attribute"])
def test_a_sort_by_length_is_read_off_words_not_letters(key: str, silent: bool, tmp_path: Path) -> None:
    """TD143 trusts an order sorted by length on purpose; `filename` holds the letters `len`, not the word."""
    source = CASES["TD143-sorted-by-length"].code.format(f"samples.sort(key={key})", doc="")
    assert ("TD143" in _codes(source, tmp_path)) is not silent
